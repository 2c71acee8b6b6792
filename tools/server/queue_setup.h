// Which queue a server runs, from --queue and --role: the in-process JobQueue (no --queue),
// or the Redis queue as an API node (api), a worker (worker) or both.
#pragma once

#include <memory>

#include "cli_params.h"
#include "job_queue.h"
#include "redis_queue.h"
#include "server_config.h"
#include "worker_loop.h"

namespace server {

class QueueSetup {
  public:
    static bool runs_model(const ServerConfig& config);   // in process, worker, both
    static bool serves_http(const ServerConfig& config);  // in process, api, both

    // `runner`: the loaded model (nullptr for an API node). Throws std::runtime_error when
    // Redis cannot be used.
    QueueSetup(const ServerConfig& config, const cli::CliParams& params, JobRunner* runner);
    ~QueueSetup();

    QueueBackend& queue();  // what the routes use (not for a worker alone)
    void start();
    void stop();  // cancels (in process) or hands back (Redis) the running job

  private:
    std::unique_ptr<JobQueue> local_;
    std::unique_ptr<RedisQueue> redis_;
    std::unique_ptr<RedisWorker> worker_;
};

// The model name a server's jobs carry (its stream): the main model file's stem.
std::string queue_model_name(const cli::CliParams& params);

}  // namespace server
