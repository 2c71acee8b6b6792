// What the routes submit jobs to and read them from: the in-process JobQueue (the default)
// or the Redis queue shared by API nodes and workers (redis_queue.h, --queue).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "job.h"

namespace server {

struct QueueStats {
    int queued = 0;
    int generating = 0;
    int retained = 0;  // finished jobs still readable
    uint64_t accepted = 0;
    uint64_t rejected = 0;  // refused because the queue was full
    uint64_t completed = 0;
    uint64_t failed = 0;
    uint64_t cancelled = 0;
};

enum class Lookup { Found, Expired, NotFound };
enum class CancelResult { Cancelled, Cancelling, AlreadyFinished, Expired, NotFound };
enum class Retention { Timed, UntilCollected };

class QueueBackend {
  public:
    virtual ~QueueBackend() = default;
    // Queues a job and returns its id. Throws RequestError 429 when the queue is full and
    // 503 when the server is stopping (or the queue cannot be reached).
    virtual std::string submit(JobSpec spec, const std::string& api, Retention retention) = 0;
    virtual Lookup find(const std::string& id, JobSnapshot* out) = 0;
    virtual CancelResult cancel(const std::string& id, JobSnapshot* out) = 0;
    // Blocks until the job finished (or the queue stops) and forgets an UntilCollected job.
    virtual JobSnapshot wait(const std::string& id) = 0;
    // As wait(), asking `abandoned` every 100 ms; once it says so (the client has gone) the
    // job is cancelled, and waited for as before.
    virtual JobSnapshot wait(const std::string& id, const std::function<bool()>& abandoned) = 0;
    virtual QueueStats stats() = 0;
    // The generating job, if any.
    virtual std::optional<JobSnapshot> current() = 0;
    // What /health adds for a shared queue (models, depths, workers); null in process.
    virtual nlohmann::json cluster_health() { return nullptr; }
};

}  // namespace server
