#include "job_transitions.h"

namespace server {

JobStatus job_status_from_name(const std::string& name) {
    for (JobStatus s : {JobStatus::Queued, JobStatus::Generating, JobStatus::Completed,
                        JobStatus::Failed, JobStatus::Cancelled})
        if (name == job_status_name(s)) return s;
    return JobStatus::Failed;
}

StartAction decide_start(const StoredJob& job, int max_attempts) {
    if (!job.exists) return StartAction::Drop;
    const JobStatus status = job_status_from_name(job.status);
    if (is_finished(status)) return StartAction::Drop;
    if (job.cancel_requested) return StartAction::Cancel;
    // Generating here means a worker took it and vanished (this is a re-delivery).
    if (job.attempts >= max_attempts) return StartAction::Abandon;
    return StartAction::Run;
}

FinishAction decide_finish(const StoredJob& job) {
    if (!job.exists || is_finished(job_status_from_name(job.status))) return FinishAction::Drop;
    return FinishAction::Write;
}

JobStatus outcome_status(const StoredJob& job, bool ok, bool cancelled_here) {
    if (cancelled_here || job.cancel_requested) return JobStatus::Cancelled;
    return ok ? JobStatus::Completed : JobStatus::Failed;
}

CancelAction decide_cancel(const StoredJob& job) {
    if (!job.exists) return CancelAction::Missing;
    const JobStatus status = job_status_from_name(job.status);
    if (is_finished(status)) return CancelAction::AlreadyDone;
    return status == JobStatus::Queued ? CancelAction::FinishNow : CancelAction::AskWorker;
}

}  // namespace server
