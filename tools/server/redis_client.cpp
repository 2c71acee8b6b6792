#include "redis_client.h"

#include <algorithm>

#include <hiredis/hiredis.h>

namespace server {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff{100};

}  // namespace

RedisClient::RedisClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

RedisClient::~RedisClient() = default;

void RedisClient::drop(const std::string& why) {
    transport_.reset();
    reader_.reset();
    backoff_ = std::min(kMaxBackoff, backoff_ == backoff_.zero() ? kFirstBackoff : backoff_ * 2);
    next_attempt_ = std::chrono::steady_clock::now() + backoff_;
    throw RedisError("Redis at " + endpoint_.display() + ": " + why);
}

void RedisClient::connect_now() {
    if (transport_) return;
    try {
        transport_ = std::make_unique<RedisTransport>(endpoint_, timeout_);
    } catch (const RedisError& e) {
        drop(e.what());
    }
    reader_ = std::make_unique<RespReader>();
    std::vector<std::vector<std::string>> setup;
    if (!endpoint_.password.empty()) {
        if (endpoint_.user.empty())
            setup.push_back({"AUTH", endpoint_.password});
        else
            setup.push_back({"AUTH", endpoint_.user, endpoint_.password});
    }
    if (endpoint_.db != 0) setup.push_back({"SELECT", std::to_string(endpoint_.db)});
    for (const auto& args : setup) {
        const RedisReply r = command(args);
        if (r.is_error()) {
            transport_.reset();
            reader_.reset();
            // A wrong password or database is no outage: retrying will not help.
            throw std::runtime_error("Redis at " + endpoint_.display() + " refused " + args[0] +
                                     ": " + r.str);
        }
    }
    backoff_ = backoff_.zero();
}

void RedisClient::ensure_connected() {
    if (transport_) return;
    if (std::chrono::steady_clock::now() < next_attempt_)
        throw RedisError("Redis at " + endpoint_.display() + " is unreachable (retrying)");
    connect_now();
}

RedisReply RedisClient::command(const std::vector<std::string>& args) {
    return pipeline({args}).front();
}

bool RedisClient::take_parsed(RedisReply& out) {
    try {
        return reader_->next(out);
    } catch (const std::runtime_error& e) {
        drop(e.what());
    }
}

bool RedisClient::next_reply(RedisReply& out, std::chrono::milliseconds wait) {
    char buffer[64 << 10];
    while (!take_parsed(out)) {
        size_t n = 0;
        try {
            n = transport_->read_some(buffer, sizeof(buffer), wait);
        } catch (const RedisError& e) {
            drop(std::string("connection lost: ") + e.what());
        }
        if (n == 0) return false;
        try {
            reader_->feed(buffer, n);
        } catch (const std::runtime_error& e) {
            drop(e.what());
        }
    }
    return true;
}

std::vector<RedisReply> RedisClient::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
    ensure_connected();
    std::string bytes;
    for (const auto& args : commands) {
        std::vector<const char*> argv;
        std::vector<size_t> lengths;
        for (const std::string& a : args) {
            argv.push_back(a.data());
            lengths.push_back(a.size());
        }
        char* formatted = nullptr;
        const int length = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()),
                                                  argv.data(), lengths.data());
        if (length < 0) drop("out of memory");
        bytes.append(formatted, static_cast<size_t>(length));
        redisFreeCommand(formatted);
    }
    try {
        transport_->write_all(bytes, timeout_);
    } catch (const RedisError& e) {
        drop(std::string("cannot send: ") + e.what());
    }
    std::vector<RedisReply> replies(commands.size());
    for (RedisReply& reply : replies)
        if (!next_reply(reply, timeout_))
            drop("no reply within " + std::to_string(timeout_.count()) + " ms");
    return replies;
}

RedisReply RedisClient::next_message(std::chrono::milliseconds wait) {
    ensure_connected();
    RedisReply message;
    next_reply(message, wait);
    return message;
}

RedisPool::Lease RedisPool::borrow() {
    std::unique_ptr<RedisClient> client;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!idle_.empty()) {
            client = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (!client) client = std::make_unique<RedisClient>(endpoint_);
    return Lease(*this, std::move(client));
}

void RedisPool::give_back(std::unique_ptr<RedisClient> client) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (client && idle_.size() < 64) idle_.push_back(std::move(client));
}

}  // namespace server
