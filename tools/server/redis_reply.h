// A Redis reply as plain values, and RespReader, which turns the bytes a Redis server sends
// (RESP 2, parsed by hiredis's reader) into them. The bytes come from the network: a reader
// fed anything either waits for more, yields replies, or throws std::runtime_error naming the
// protocol error (RedisClient then drops the connection). hiredis allocates an array's slots
// when its header arrives ("*2000000000" would be 16 GB before one element came), so a reply's
// arrays may hold kMaxElements slots in all.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

struct redisReader;
struct redisReadTask;

namespace server {

struct RedisReply {
    enum class Type { Nil, Integer, String, Status, Error, Array };
    Type type = Type::Nil;
    long long integer = 0;
    std::string str;  // String, Status, Error
    std::vector<RedisReply> elements;

    bool is_nil() const { return type == Type::Nil; }
    bool is_error() const { return type == Type::Error; }
    // A String/Status reply's text, an Integer's digits, "" for Nil.
    std::string text() const;
    // An error Redis answers while it cannot serve for a moment (LOADING its data after a
    // restart, BUSY with a script, MASTERDOWN, TRYAGAIN): an outage, not a refusal.
    bool is_transient_error() const;
    // Throws naming `what` when the reply is an error: RedisError (an outage: callers retry
    // or answer 503) for a transient one, std::runtime_error otherwise.
    const RedisReply& expect(const char* what) const;
};

class RespReader {
  public:
    // Far above any reply the queue reads (a job hash, a queue's entries, the worker list).
    static constexpr long long kMaxElements = 1 << 22;

    RespReader();  // throws std::bad_alloc
    ~RespReader();
    RespReader(const RespReader&) = delete;
    RespReader& operator=(const RespReader&) = delete;

    void feed(const char* bytes, size_t size);
    // The next whole reply into `out`; false while its bytes have not all come.
    bool next(RedisReply& out);

    // hiredis's callback for an array's header (task->privdata: the RespReader).
    static void* create_array(const redisReadTask* task, int elements);

  private:
    redisReader* reader_;
    long long elements_ = 0;  // array slots of the reply being read
    long long refused_ = 0;   // an array refused for the limit: its size
};

}  // namespace server
