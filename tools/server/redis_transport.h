// The byte stream under one Redis connection: TCP, or TLS over TCP for rediss://, with
// every wait bounded (the socket is non-blocking; waits are poll()s). Debian's hiredis
// (0.14) has no TLS, so RedisClient formats and parses with hiredis and moves the bytes here.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

#include "redis_url.h"

struct ssl_st;

namespace server {

// Redis cannot be reached (connection refused, lost, timed out, TLS handshake failed).
class RedisError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class RedisTransport {
  public:
    // Connects (and for TLS, shakes hands and checks the certificate) within `timeout`.
    // Throws RedisError with the reason.
    RedisTransport(const RedisEndpoint& endpoint, std::chrono::milliseconds timeout);
    ~RedisTransport();
    RedisTransport(const RedisTransport&) = delete;
    RedisTransport& operator=(const RedisTransport&) = delete;

    // Sends every byte or throws RedisError (lost, or no progress within `timeout`).
    void write_all(std::string_view bytes, std::chrono::milliseconds timeout);
    // Reads what has arrived, waiting up to `wait` for the first byte: 0 when nothing came.
    // Throws RedisError when the peer closed or the connection failed.
    size_t read_some(char* buffer, size_t size, std::chrono::milliseconds wait);

  private:
    // Waits for `events` on the socket; false on timeout.
    bool wait_for(short events, std::chrono::steady_clock::time_point deadline) const;
    void handshake(const RedisEndpoint& endpoint, std::chrono::steady_clock::time_point deadline);

    int fd_ = -1;
    ssl_st* ssl_ = nullptr;
};

}  // namespace server
