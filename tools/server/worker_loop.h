// A worker of the Redis queue (--role worker or both): takes its model's jobs from the
// stream's consumer group, first those another worker left unacknowledged for longer than
// the visibility timeout (XAUTOCLAIM: that worker died), else new ones; runs each on the
// model and stores its outcome exactly once (redis_jobs.h). Meanwhile a reporter thread
// writes the progress and previews, keeps the job's delivery fresh (so no other worker
// takes it while this one lives) and the worker's heartbeat; a listener thread takes
// cancels from pub/sub. Redis lost: every thread retries with backoff (0.2 s doubling to
// 5 s) and carries on where it was; a finished job's outcome waits in memory until stored.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "job.h"
#include "job_transitions.h"
#include "redis_client.h"

namespace server {

struct WorkerSettings {
    RedisEndpoint endpoint;
    std::string model;
    cli::CliParams defaults;  // the worker's own command line (parses the requests)
    ServerLimits limits;
    int visibility_ms = 30000;  // a delivery idle this long is taken over
    int result_ttl_seconds = 600;
    int max_attempts = 3;  // starts without an outcome before the job fails
    std::string name;      // the consumer name: host:pid:random when empty
};

class RedisWorker {
  public:
    RedisWorker(WorkerSettings settings, JobRunner& runner);
    ~RedisWorker();

    const std::string& name() const { return name_; }
    void start();
    // Stops taking jobs; a running one is interrupted and left to another worker.
    void stop();

  private:
    struct Current;

    void take_jobs();
    void report();
    void listen_cancels();
    bool next_delivery(RedisClient& client, std::string& entry, std::string& id);
    void handle(RedisClient& client, const std::string& entry, const std::string& id);
    // The start transaction: what to do with this delivery (and the stored request).
    StartAction begin(RedisClient& client, const std::string& entry, const std::string& id,
                      std::string& payload);
    RunOutcome run_payload(const std::shared_ptr<Current>& job, const std::string& payload,
                           std::optional<JobSpec>& spec);
    void store_outcome(RedisClient& client, const Current& job, RunOutcome& outcome,
                       const JobSpec* spec);
    void report_once(RedisClient& client);
    void cancel_job(Current& job, const char* via);
    void backoff(int& step);

    WorkerSettings settings_;
    JobRunner& runner_;
    std::string name_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::shared_ptr<Current> current_;  // the running job
    std::string claim_cursor_ = "0-0";  // XAUTOCLAIM's scan of the deliveries (taker thread)
    std::chrono::steady_clock::time_point claim_after_;  // no take-over before (taker thread)
    std::thread taker_, reporter_, listener_;
};

}  // namespace server
