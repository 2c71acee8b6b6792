// The API side of the Redis queue (--queue): jobs go into their model's stream and live in
// Redis hashes (redis_jobs.h), so that any API node reads, waits for and cancels any job
// and workers anywhere run them (worker_loop.h). Redis unreachable: the routes answer 503
// ("queue_unavailable"); a synchronous request already waiting keeps waiting through an
// outage of up to a minute.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "queue_backend.h"
#include "redis_client.h"

namespace server {

struct RedisQueueSettings {
    RedisEndpoint endpoint;
    std::string model;     // the stream this node submits to
    int max_pending = 64;  // queued or generating in the model's stream; more: 429
    int result_ttl_seconds = 600;
};

class RedisQueue : public QueueBackend {
  public:
    // Checks that Redis answers; throws std::runtime_error saying why not.
    explicit RedisQueue(RedisQueueSettings settings);
    ~RedisQueue() override;

    void start();  // the listener of finished jobs
    void stop();   // wakes every waiter (answered 503)

    std::string submit(JobSpec spec, const std::string& api, Retention retention) override;
    Lookup find(const std::string& id, JobSnapshot* out) override;
    CancelResult cancel(const std::string& id, JobSnapshot* out) override;
    JobSnapshot wait(const std::string& id) override;
    JobSnapshot wait(const std::string& id, const std::function<bool()>& abandoned) override;
    QueueStats stats() override;
    std::optional<JobSnapshot> current() override;
    nlohmann::json cluster_health() override;

  private:
    void listen_done();
    Lookup read(RedisClient& client, const std::string& id, JobSnapshot* out);
    int queue_position(RedisClient& client, const std::string& model, const std::string& entry);
    // A job hash's output fields: mode ("vid_gen" or "img_gen"), output_format, fps.
    struct OutputFields {
        std::string mode, format, fps;
    };
    std::shared_ptr<JobSpec> spec_of(const std::string& id, const OutputFields& output,
                                     const std::string& settled);
    nlohmann::json live_workers(RedisClient& client);
    void record_entry(RedisClient& client, const std::string& id, const std::string& entry);

    const RedisQueueSettings settings_;
    RedisPool pool_;
    std::mutex mutex_;
    std::condition_variable done_cv_;
    std::map<std::string, bool> waiting_;  // id -> finished message seen
    // The parsed requests of this node's synchronous jobs, until collected.
    std::map<std::string, std::shared_ptr<JobSpec>> specs_;
    std::atomic<uint64_t> accepted_{0}, rejected_{0};
    size_t value_limit_ = 0;  // the largest request Redis takes (redis_jobs::value_limit)
    std::atomic<bool> stopping_{false};
    std::thread listener_;
};

}  // namespace server
