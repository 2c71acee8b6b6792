// The bounded job queue and its single worker: every API submits here, so generations run
// one at a time in arrival order while HTTP threads stay free. Queued jobs can be
// cancelled at once, a generating one at its next sampling step. Finished jobs of the
// native API stay readable for the retention time, then answer "expired"; jobs of the
// synchronous APIs are dropped when their request collects them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "job.h"
#include "queue_backend.h"

namespace server {

struct QueueSettings {
    int max_pending = 64;  // queued + generating
    int retention_seconds = 600;
};

class JobQueue : public QueueBackend {
  public:
    JobQueue(JobRunner& runner, QueueSettings settings);
    ~JobQueue() override;
    JobQueue(const JobQueue&) = delete;
    JobQueue& operator=(const JobQueue&) = delete;

    void start();
    // Cancels every queued job and the running one, wakes every waiter, joins the worker.
    void stop();

    // Queues a job and returns its id. Throws RequestError 429 when the queue is full and
    // 503 when the server is stopping.
    std::string submit(JobSpec spec, const std::string& api, Retention retention) override;
    Lookup find(const std::string& id, JobSnapshot* out) override;
    CancelResult cancel(const std::string& id, JobSnapshot* out) override;
    // Blocks until the job finished (or the queue stops) and forgets an UntilCollected job.
    JobSnapshot wait(const std::string& id) override;
    // As wait(), asking `abandoned` every 100 ms; once it says so (the client has gone) the
    // job is cancelled, and waited for as before.
    JobSnapshot wait(const std::string& id, const std::function<bool()>& abandoned) override;
    QueueStats stats() override;
    // The generating job, if any.
    std::optional<JobSnapshot> current() override;
    const QueueSettings& settings() const { return settings_; }

  private:
    struct Job;
    using Clock = std::chrono::steady_clock;

    void worker();
    void run_one(const std::shared_ptr<Job>& job);
    void finish(Job& job, JobStatus status, const std::string& code, const std::string& message);
    CancelResult cancel_locked(const std::shared_ptr<Job>& job, const std::string& reason);
    void purge_expired();
    JobSnapshot snapshot(const Job& job) const;
    std::string make_id();

    JobRunner& runner_;
    const QueueSettings settings_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable done_cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::map<std::string, std::shared_ptr<Job>> jobs_;
    std::map<std::string, Clock::time_point> expired_;  // id -> when to forget it
    std::shared_ptr<Job> running_;
    QueueStats counters_;
    uint64_t next_id_ = 1;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace server
