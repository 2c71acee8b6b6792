// --queue's value: redis://[user:password@]HOST:PORT[/DB] (plain TCP; %XX escapes in the
// credentials).
#pragma once

#include <string>

namespace server {

struct RedisEndpoint {
    std::string host;
    int port = 6379;
    std::string user;  // empty: the default user (AUTH with the password alone)
    std::string password;
    int db = 0;
    // "HOST:PORT/DB" without the credentials, for messages and /health.
    std::string display() const;
};

// Throws std::invalid_argument with a message naming what is wrong.
RedisEndpoint parse_redis_url(const std::string& url);

}  // namespace server
