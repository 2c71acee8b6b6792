// --queue's value: redis://[user:password@]HOST:PORT[/DB] (plain TCP) or rediss://... (TLS);
// %XX escapes in the credentials.
#pragma once

#include <memory>
#include <string>

namespace server {

class RedisTlsContext;

struct RedisEndpoint {
    std::string host;
    int port = 6379;
    std::string user;  // empty: the default user (AUTH with the password alone)
    std::string password;
    int db = 0;
    bool tls = false;  // rediss://
    // Set for rediss:// before connecting (queue_setup: from --queue-tls-*).
    std::shared_ptr<const RedisTlsContext> tls_context;
    // "HOST:PORT/DB" (with " over TLS" for rediss://) without the credentials, for messages and
    // /health.
    std::string display() const;
};

// Throws std::invalid_argument with a message naming what is wrong.
RedisEndpoint parse_redis_url(const std::string& url);

}  // namespace server
