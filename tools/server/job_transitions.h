// The decisions behind the Redis queue's exactly-once completion, as pure functions of a
// job's stored state (its hash in Redis, read under WATCH): what a worker does with a
// delivered job, whether its outcome is written, what a cancel does. redis_queue.cpp and
// worker_loop.cpp apply them in MULTI/EXEC transactions, so that two workers holding the
// same job (a re-delivery after a visibility timeout) write one result between them.
#pragma once

#include <string>

#include "job.h"

namespace server {

// The fields of a job's hash the decisions read.
struct StoredJob {
    bool exists = false;  // the hash is there (gone: collected or expired)
    std::string status;   // job_status_name()
    int attempts = 0;     // deliveries that started it
    bool cancel_requested = false;
};

// The status stored under a name; Failed for an unknown one.
JobStatus job_status_from_name(const std::string& name);

enum class StartAction {
    Run,      // mark it generating (attempts + 1) and run it
    Drop,     // finished already, or gone: acknowledge the delivery, run nothing
    Cancel,   // a cancel was asked before this delivery: finish it cancelled
    Abandon,  // started max_attempts times without finishing: finish it failed
};
StartAction decide_start(const StoredJob& job, int max_attempts);

enum class FinishAction {
    Write,  // the first outcome: store it
    Drop,   // a result is stored already (or the job is gone): acknowledge only
};
FinishAction decide_finish(const StoredJob& job);

// The status a worker's outcome is stored with: a cancel asked for (here or in the hash)
// wins over images made meanwhile, as in the in-process queue.
JobStatus outcome_status(const StoredJob& job, bool ok, bool cancelled_here);

enum class CancelAction {
    FinishNow,    // still queued: cancelled at once
    AskWorker,    // generating: flag it and tell the worker
    AlreadyDone,  // finished
    Missing,      // no such job (expired or never)
};
CancelAction decide_cancel(const StoredJob& job);

}  // namespace server
