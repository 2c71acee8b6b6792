// What the routes share: the settings, the command line's generation defaults, the job
// queue and the model's name.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "cli_params.h"
#include "job_queue.h"
#include "job_spec.h"
#include "server_config.h"

namespace server {

struct ServerState {
    ServerState(ServerConfig c, cli::CliParams d, QueueBackend& q)
        : config(std::move(c)), defaults(std::move(d)), queue(q) {}

    ServerConfig config;
    cli::CliParams defaults;  // model files and default generation options
    QueueBackend& queue;
    std::string index_html;   // --serve-html-path's page; empty: the built-in one
    LoraCheck check_lora;     // a request's LoRAs against the loaded model
    bool ref_images = false;  // the loaded model takes reference images
    // The loaded model makes videos; unknown on an API node without the model.
    std::optional<bool> makes_video;
    std::atomic<bool> stopping{false};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    ParseContext parse_context() const { return {defaults, config.limits, check_lora, ref_images}; }
    // The main model file (-m, else --diffusion-model).
    const std::string& model_path() const {
        return defaults.model_path.empty() ? defaults.diffusion_model_path : defaults.model_path;
    }
};

}  // namespace server
