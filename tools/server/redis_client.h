// A thin RAII Redis client: one connection (not thread-safe; one per thread or borrowed from
// a RedisPool), commands as argument vectors formatted and replies parsed by RespReader
// (hiredis's), the bytes moved by RedisTransport (TCP or TLS), replies copied into plain values. A
// lost connection is a RedisError; the next command reconnects, at most once per backoff step (0.1
// s doubling to 5 s) so that callers fail fast while Redis is away.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "redis_reply.h"
#include "redis_transport.h"
#include "redis_url.h"

namespace server {

class RedisClient {
  public:
    // `timeout`: for connecting and for each reply (blocking commands must wait less).
    explicit RedisClient(RedisEndpoint endpoint,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));
    ~RedisClient();
    RedisClient(const RedisClient&) = delete;
    RedisClient& operator=(const RedisClient&) = delete;

    RedisReply command(const std::vector<std::string>& args);
    // Sends every command, then reads every reply (one round trip).
    std::vector<RedisReply> pipeline(const std::vector<std::vector<std::string>>& commands);

    // Pub/sub: after command({"SUBSCRIBE", ...}), the next pushed message; Nil when none
    // arrived within `wait`.
    RedisReply next_message(std::chrono::milliseconds wait);

    // The longest a lost connection waits before its next attempt (the backoff doubles to it).
    static constexpr std::chrono::milliseconds kMaxBackoff{5000};

    // Connects now (throws RedisError with the reason), ignoring the backoff.
    void connect_now();
    bool connected() const { return transport_ != nullptr; }
    const RedisEndpoint& endpoint() const { return endpoint_; }

  private:
    void ensure_connected();
    [[noreturn]] void drop(const std::string& why);  // closes and throws RedisError
    // Reads until the parser holds one whole reply (waiting up to `wait`); Nil when none came.
    bool next_reply(RedisReply& out, std::chrono::milliseconds wait);
    bool take_parsed(RedisReply& out);

    RedisEndpoint endpoint_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<RedisTransport> transport_;
    std::unique_ptr<RespReader> reader_;
    std::chrono::steady_clock::time_point next_attempt_{};
    std::chrono::milliseconds backoff_{0};
};

// Connections shared by the HTTP threads: borrow one for a few commands.
class RedisPool {
  public:
    explicit RedisPool(RedisEndpoint endpoint) : endpoint_(std::move(endpoint)) {}

    class Lease {
      public:
        Lease(RedisPool& pool, std::unique_ptr<RedisClient> client)
            : pool_(pool), client_(std::move(client)) {}
        ~Lease() { pool_.give_back(std::move(client_)); }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        RedisClient* operator->() { return client_.get(); }
        RedisClient& operator*() { return *client_; }

      private:
        RedisPool& pool_;
        std::unique_ptr<RedisClient> client_;
    };

    Lease borrow();
    const RedisEndpoint& endpoint() const { return endpoint_; }

  private:
    void give_back(std::unique_ptr<RedisClient> client);

    RedisEndpoint endpoint_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<RedisClient>> idle_;
};

}  // namespace server
