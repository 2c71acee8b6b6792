#include "job_queue.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "request_error.h"

namespace server {

struct JobQueue::Job {
    std::string id;
    std::string api;
    Retention retention = Retention::Timed;
    std::shared_ptr<JobSpec> spec;
    JobStatus status = JobStatus::Queued;
    int64_t created = 0, started = 0, completed = 0;
    Clock::time_point finished_at;
    std::atomic<bool> cancel_requested{false};
    std::string cancel_reason;
    // Written by the worker's step callback, read by snapshots.
    std::atomic<int> step{0}, steps{0}, image{0}, images{0};
    std::shared_ptr<const std::vector<ResultImage>> results;
    std::shared_ptr<const JobPreview> preview;  // under the queue's mutex
    std::string error_code, error_message;
};

namespace {

void trim_heap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

int64_t unix_now() {
    return static_cast<int64_t>(std::time(nullptr));
}

// Tombstones of expired jobs are kept for this long (at least), so polling clients get
// "expired" rather than "not found".
constexpr std::chrono::hours kTombstoneLife{6};
constexpr size_t kMaxTombstones = 100000;

}  // namespace

const char* job_status_name(JobStatus status) {
    switch (status) {
        case JobStatus::Queued:
            return "queued";
        case JobStatus::Generating:
            return "generating";
        case JobStatus::Completed:
            return "completed";
        case JobStatus::Failed:
            return "failed";
        case JobStatus::Cancelled:
            return "cancelled";
    }
    return "failed";
}

JobQueue::JobQueue(JobRunner& runner, QueueSettings settings)
    : runner_(runner), settings_(settings) {}

JobQueue::~JobQueue() {
    stop();
}

void JobQueue::start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { worker(); });
}

void JobQueue::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        for (const auto& job : queue_)
            finish(*job, JobStatus::Cancelled, "cancelled", "the server is stopping");
        queue_.clear();
        if (running_) {
            running_->cancel_reason = "the server is stopping";
            running_->cancel_requested = true;
            runner_.interrupt();
        }
    }
    work_cv_.notify_all();
    done_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::string JobQueue::make_id() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "job_%08llx_%06llu_%04x",
                  static_cast<unsigned long long>(unix_now()),
                  static_cast<unsigned long long>(next_id_++),
                  static_cast<unsigned>(rng() & 0xFFFF));
    return buffer;
}

std::string JobQueue::submit(JobSpec spec, const std::string& api, Retention retention) {
    auto job = std::make_shared<Job>();
    job->api = api;
    job->retention = retention;
    job->images = spec.params.batch_count;
    spec.source = {};  // only a shared queue sends the request on
    job->spec = std::make_shared<JobSpec>(std::move(spec));
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) throw RequestError(503, "server_stopping", "", "the server is stopping");
        purge_expired();
        const size_t pending = queue_.size() + (running_ ? 1 : 0);
        if (pending >= static_cast<size_t>(settings_.max_pending)) {
            ++counters_.rejected;
            throw RequestError(429, "queue_full", "",
                               "the job queue is full (" + std::to_string(settings_.max_pending) +
                                   " jobs queued or generating); try again later");
        }
        job->id = make_id();
        job->created = unix_now();
        jobs_[job->id] = job;
        queue_.push_back(job);
        ++counters_.accepted;
    }
    work_cv_.notify_one();
    return job->id;
}

JobSnapshot JobQueue::snapshot(const Job& job) const {
    JobSnapshot s;
    s.id = job.id;
    s.api = job.api;
    s.status = job.status;
    s.created = job.created;
    s.started = job.started;
    s.completed = job.completed;
    if (job.status == JobStatus::Queued) {
        for (size_t i = 0; i < queue_.size(); ++i)
            if (queue_[i]->id == job.id) s.queue_position = static_cast<int>(i) + 1;
    }
    s.progress = {job.step.load(), job.steps.load(), job.image.load(), job.images.load()};
    s.images = job.results;
    if (job.status == JobStatus::Generating) s.preview = job.preview;
    s.error_code = job.error_code;
    s.error_message = job.error_message;
    s.spec = job.spec;
    return s;
}

Lookup JobQueue::find(const std::string& id, JobSnapshot* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    purge_expired();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return expired_.count(id) ? Lookup::Expired : Lookup::NotFound;
    if (out) *out = snapshot(*it->second);
    return Lookup::Found;
}

CancelResult JobQueue::cancel(const std::string& id, JobSnapshot* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    purge_expired();
    auto it = jobs_.find(id);
    if (it == jobs_.end())
        return expired_.count(id) ? CancelResult::Expired : CancelResult::NotFound;
    const CancelResult result = cancel_locked(it->second, "job cancelled by client");
    if (out) *out = snapshot(*it->second);
    return result;
}

CancelResult JobQueue::cancel_locked(const std::shared_ptr<Job>& job, const std::string& reason) {
    if (job->status == JobStatus::Queued) {
        queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
        finish(*job, JobStatus::Cancelled, "cancelled", reason);
        done_cv_.notify_all();
        return CancelResult::Cancelled;
    }
    if (job->status == JobStatus::Generating) {
        job->cancel_reason = reason;
        job->cancel_requested = true;
        runner_.interrupt();
        return CancelResult::Cancelling;
    }
    return CancelResult::AlreadyFinished;
}

JobSnapshot JobQueue::wait(const std::string& id) {
    return wait(id, nullptr);
}

JobSnapshot JobQueue::wait(const std::string& id, const std::function<bool()>& abandoned) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
        JobSnapshot gone;
        gone.id = id;
        gone.status = JobStatus::Failed;
        gone.error_code = "not_found";
        gone.error_message = "the job is gone";
        return gone;
    }
    std::shared_ptr<Job> job = it->second;
    for (bool cancelled = false; !is_finished(job->status);) {
        if (!cancelled && abandoned && abandoned()) {
            cancel_locked(job, "the client disconnected");
            cancelled = true;
            continue;
        }
        done_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    JobSnapshot s = snapshot(*job);
    if (job->retention == Retention::UntilCollected) jobs_.erase(job->id);
    return s;
}

QueueStats JobQueue::stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    QueueStats s = counters_;
    s.queued = static_cast<int>(queue_.size());
    s.generating = running_ ? 1 : 0;
    for (const auto& [id, job] : jobs_)
        if (is_finished(job->status)) ++s.retained;
    return s;
}

std::optional<JobSnapshot> JobQueue::current() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return std::nullopt;
    return snapshot(*running_);
}

void JobQueue::finish(Job& job, JobStatus status, const std::string& code,
                      const std::string& message) {
    job.status = status;
    job.completed = unix_now();
    job.finished_at = Clock::now();
    job.error_code = code;
    job.error_message = message;
    if (status == JobStatus::Completed) ++counters_.completed;
    if (status == JobStatus::Failed) ++counters_.failed;
    if (status == JobStatus::Cancelled) ++counters_.cancelled;
}

void JobQueue::purge_expired() {
    const Clock::time_point now = Clock::now();
    const auto retention = std::chrono::seconds(settings_.retention_seconds);
    for (auto it = expired_.begin(); it != expired_.end();)
        it = it->second <= now ? expired_.erase(it) : std::next(it);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
        const Job& job = *it->second;
        if (job.retention == Retention::Timed && is_finished(job.status) &&
            now - job.finished_at >= retention) {
            if (expired_.size() < kMaxTombstones)
                expired_[job.id] = now + std::max<Clock::duration>(retention, kTombstoneLife);
            it = jobs_.erase(it);
        } else {
            ++it;
        }
    }
}

void JobQueue::worker() {
    std::unique_lock<std::mutex> lock(mutex_);
    bool trimmed = true;  // nothing freed since the last trim
    while (!stopping_) {
        const bool idle = !work_cv_.wait_for(lock, std::chrono::seconds(1),
                                             [&] { return stopping_ || !queue_.empty(); });
        purge_expired();
        if (idle && !trimmed) {
            // A second with nothing to do after a burst: its requests have been answered,
            // so hand their freed buffers back to the system (outside the lock: the routes
            // read the queue meanwhile).
            lock.unlock();
            trim_heap();
            lock.lock();
            trimmed = true;
        }
        if (stopping_ || queue_.empty()) continue;
        std::shared_ptr<Job> job = queue_.front();
        queue_.pop_front();
        job->status = JobStatus::Generating;
        job->started = unix_now();
        running_ = job;
        lock.unlock();
        run_one(job);
        lock.lock();
        running_.reset();
        done_cv_.notify_all();
        trimmed = false;
    }
}

void JobQueue::run_one(const std::shared_ptr<Job>& job) {
    RunHooks hooks;
    hooks.cancelled = &job->cancel_requested;
    int last_step = 0;
    hooks.on_step = [job, &last_step](int step, int steps) {
        advance_progress(*job, last_step, step, steps);
    };
    hooks.on_preview = [this, job](JobPreview preview) {
        preview.image = job->image;
        auto shared = std::make_shared<const JobPreview>(std::move(preview));
        std::lock_guard<std::mutex> lock(mutex_);
        job->preview = std::move(shared);
    };
    RunOutcome outcome;
    if (!job->cancel_requested) outcome = runner_.run(*job->spec, hooks);
    std::lock_guard<std::mutex> lock(mutex_);
    job->preview.reset();
    if (job->cancel_requested) {
        finish(*job, JobStatus::Cancelled, "cancelled", job->cancel_reason);
    } else if (outcome.ok) {
        job->results = std::make_shared<const std::vector<ResultImage>>(std::move(outcome.images));
        finish(*job, JobStatus::Completed, "", "");
    } else {
        finish(*job, JobStatus::Failed, "generation_failed",
               outcome.error.empty() ? "the generation failed" : outcome.error);
    }
}

}  // namespace server
