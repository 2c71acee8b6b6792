// The server's own settings (address, queue, limits), next to the model and default
// generation options it shares with sd-cli (cli::CliParams).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "redis_tls.h"

namespace server {

// What one request may ask for.
struct ServerLimits {
    int min_side = 64;
    int max_side = 2048;  // width and height
    int max_batch = 8;    // images per request
    int max_steps = 150;
};

struct ServerConfig {
    std::string listen_ip = "127.0.0.1";
    int listen_port = 1234;  // 0: any free port (the log says which)
    std::string serve_html_path;
    int max_queue_size = 64;          // jobs queued or generating
    int job_retention_seconds = 600;  // how long finished native jobs stay readable
    size_t max_body_bytes = size_t{64} << 20;
    int http_threads = 0;  // connection threads at most (made as needed); 0: see http_threads_for
    int http_read_timeout_seconds = 5;  // a request's head in all, and each body read
    int max_client_connections = 64;    // open connections from one address
    ServerLimits limits;
    // --queue redis://...: jobs go through Redis (redis_queue.h); --role api|worker|both.
    std::string queue_url;
    RedisTlsFiles queue_tls;  // rediss://: --queue-tls-ca, --queue-tls-cert, --queue-tls-key
    std::string role = "both";
    int queue_visibility_seconds = 30;  // a worker silent this long loses its job
    bool verbose = false;
    bool color = false;
    bool help = false;
};

inline int http_threads_for(const ServerConfig& c) {
    return c.http_threads > 0 ? c.http_threads : std::max(512, c.max_queue_size + 64);
}

}  // namespace server
