#include "queue_setup.h"

#include <filesystem>
#include <stdexcept>

#include "log_output.h"
#include "redis_tls.h"

namespace server {

std::string queue_model_name(const cli::CliParams& params) {
    const std::string& path =
        params.model_path.empty() ? params.diffusion_model_path : params.model_path;
    return std::filesystem::path(path).stem().string();
}

bool QueueSetup::runs_model(const ServerConfig& config) {
    return config.queue_url.empty() || config.role != "api";
}

bool QueueSetup::serves_http(const ServerConfig& config) {
    return config.queue_url.empty() || config.role != "worker";
}

QueueSetup::QueueSetup(const ServerConfig& config, const cli::CliParams& params,
                       JobRunner* runner) {
    if (config.queue_url.empty()) {
        if (!runner) throw std::logic_error("the in-process queue needs the model");
        local_ = std::make_unique<JobQueue>(
            *runner, QueueSettings{config.max_queue_size, config.job_retention_seconds});
        return;
    }
    RedisEndpoint endpoint = parse_redis_url(config.queue_url);
    if (endpoint.tls) endpoint.tls_context = std::make_shared<RedisTlsContext>(config.queue_tls);
    const std::string model = queue_model_name(params);
    if (serves_http(config))
        redis_ = std::make_unique<RedisQueue>(RedisQueueSettings{
            endpoint, model, config.max_queue_size, config.job_retention_seconds});
    if (runs_model(config)) {
        if (!runner) throw std::logic_error("a worker needs the model");
        if (!redis_) RedisQueue(RedisQueueSettings{endpoint, model, 1, 1});  // reachable?
        WorkerSettings w;
        w.endpoint = endpoint;
        w.model = model;
        w.defaults = params;
        w.limits = config.limits;
        w.visibility_ms = config.queue_visibility_seconds * 1000;
        w.result_ttl_seconds = config.job_retention_seconds;
        worker_ = std::make_unique<RedisWorker>(std::move(w), *runner);
    }
    cli::log_info("queue: Redis at %s, role %s, model %s%s%s", endpoint.display().c_str(),
                  config.role.c_str(), model.c_str(), worker_ ? ", worker " : "",
                  worker_ ? worker_->name().c_str() : "");
}

QueueSetup::~QueueSetup() {
    stop();
}

QueueBackend& QueueSetup::queue() {
    if (local_) return *local_;
    if (!redis_) throw std::logic_error("a worker alone has no queue for routes");
    return *redis_;
}

void QueueSetup::start() {
    if (local_) local_->start();
    if (redis_) redis_->start();
    if (worker_) {
        worker_->start();
        cli::log_info("worker %s ready", worker_->name().c_str());
    }
}

void QueueSetup::stop() {
    if (local_) local_->stop();
    if (worker_) worker_->stop();
    if (redis_) redis_->stop();
}

}  // namespace server
