#include "redis_client.h"

#include <poll.h>

#include <algorithm>

#include <hiredis/hiredis.h>

namespace server {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

RedisReply copy_reply(const redisReply* r) {
    RedisReply out;
    if (!r) return out;
    switch (r->type) {
        case REDIS_REPLY_INTEGER:
            out.type = RedisReply::Type::Integer;
            out.integer = r->integer;
            break;
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
        case REDIS_REPLY_ERROR:
            out.type = r->type == REDIS_REPLY_STRING   ? RedisReply::Type::String
                       : r->type == REDIS_REPLY_STATUS ? RedisReply::Type::Status
                                                       : RedisReply::Type::Error;
            out.str.assign(r->str, r->len);
            break;
        case REDIS_REPLY_ARRAY:
            out.type = RedisReply::Type::Array;
            for (size_t i = 0; i < r->elements; ++i)
                out.elements.push_back(copy_reply(r->element[i]));
            break;
        default:
            break;
    }
    return out;
}

struct ReplyDeleter {
    void operator()(void* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<void, ReplyDeleter>;

constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{5000};

}  // namespace

std::string RedisReply::text() const {
    if (type == Type::Integer) return std::to_string(integer);
    return str;
}

const RedisReply& RedisReply::expect(const char* what) const {
    if (is_error()) throw std::runtime_error(std::string(what) + ": Redis answered " + str);
    return *this;
}

RedisClient::RedisClient(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

RedisClient::~RedisClient() {
    if (ctx_) redisFree(ctx_);
}

void RedisClient::drop(const std::string& why) {
    const std::string detail = ctx_ && ctx_->errstr[0] ? std::string(": ") + ctx_->errstr : "";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    backoff_ = std::min(kMaxBackoff, backoff_ == backoff_.zero() ? kFirstBackoff : backoff_ * 2);
    next_attempt_ = std::chrono::steady_clock::now() + backoff_;
    throw RedisError("Redis at " + endpoint_.display() + ": " + why + detail);
}

void RedisClient::connect_now() {
    if (ctx_) return;
    ctx_ = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, to_timeval(timeout_));
    if (!ctx_ || ctx_->err) {
        if (!ctx_) throw RedisError("Redis at " + endpoint_.display() + ": out of memory");
        drop("cannot connect");
    }
    redisSetTimeout(ctx_, to_timeval(timeout_));
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
            redisFree(ctx_);
            ctx_ = nullptr;
            // A wrong password or database is no outage: retrying will not help.
            throw std::runtime_error("Redis at " + endpoint_.display() + " refused " + args[0] +
                                     ": " + r.str);
        }
    }
    backoff_ = backoff_.zero();
}

void RedisClient::ensure_connected() {
    if (ctx_) return;
    if (std::chrono::steady_clock::now() < next_attempt_)
        throw RedisError("Redis at " + endpoint_.display() + " is unreachable (retrying)");
    connect_now();
}

RedisReply RedisClient::command(const std::vector<std::string>& args) {
    return pipeline({args}).front();
}

std::vector<RedisReply> RedisClient::pipeline(
    const std::vector<std::vector<std::string>>& commands) {
    ensure_connected();
    for (const auto& args : commands) {
        std::vector<const char*> argv;
        std::vector<size_t> lengths;
        for (const std::string& a : args) {
            argv.push_back(a.data());
            lengths.push_back(a.size());
        }
        if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(),
                                   lengths.data()) != REDIS_OK)
            drop("cannot send");
    }
    std::vector<RedisReply> replies;
    for (size_t i = 0; i < commands.size(); ++i) {
        void* raw = nullptr;
        if (redisGetReply(ctx_, &raw) != REDIS_OK) drop("connection lost");
        ReplyPtr reply(raw);
        replies.push_back(copy_reply(static_cast<redisReply*>(raw)));
    }
    return replies;
}

RedisReply RedisClient::next_message(std::chrono::milliseconds wait) {
    ensure_connected();
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) drop("bad reply");
    if (!raw) {
        pollfd fd{ctx_->fd, POLLIN, 0};
        const int ready = ::poll(&fd, 1, static_cast<int>(wait.count()));
        if (ready == 0) return {};
        if (ready < 0 || redisBufferRead(ctx_) != REDIS_OK) drop("connection lost");
        if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) drop("bad reply");
        if (!raw) return {};
    }
    ReplyPtr reply(raw);
    return copy_reply(static_cast<redisReply*>(raw));
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
