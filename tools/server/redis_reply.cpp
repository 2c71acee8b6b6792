#include "redis_reply.h"

#include <new>
#include <stdexcept>

#include <hiredis/hiredis.h>

#include "redis_transport.h"

namespace server {
namespace {

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

}  // namespace

std::string RedisReply::text() const {
    if (type == Type::Integer) return std::to_string(integer);
    return str;
}

bool RedisReply::is_transient_error() const {
    if (!is_error()) return false;
    const std::string code = str.substr(0, str.find(' '));
    return code == "LOADING" || code == "BUSY" || code == "MASTERDOWN" || code == "TRYAGAIN";
}

const RedisReply& RedisReply::expect(const char* what) const {
    if (is_transient_error())
        throw RedisError(std::string(what) + ": Redis cannot serve yet: " + str);
    if (is_error()) throw std::runtime_error(std::string(what) + ": Redis answered " + str);
    return *this;
}

namespace {

// hiredis's own reply functions, arrays going through RespReader::create_array first.
struct BoundedFunctions {
    redisReplyObjectFunctions table;
    void* (*plain_array)(const redisReadTask*, int);
};

const BoundedFunctions& bounded_functions() {
    static BoundedFunctions* f = [] {
        redisReader* plain = redisReaderCreate();
        if (!plain) throw std::bad_alloc();
        auto* out = new BoundedFunctions{*plain->fn, plain->fn->createArray};
        redisReaderFree(plain);
        out->table.createArray = &RespReader::create_array;
        return out;
    }();
    return *f;
}

}  // namespace

void* RespReader::create_array(const redisReadTask* task, int elements) {
    auto* self = static_cast<RespReader*>(task->privdata);
    if (elements > 0) {
        self->elements_ += elements;
        if (self->elements_ > kMaxElements) {
            self->refused_ = elements;
            return nullptr;  // hiredis: an error, the partial reply freed
        }
    }
    return bounded_functions().plain_array(task, elements);
}

RespReader::RespReader() {
    // hiredis takes a non-const table it never writes.
    reader_ = redisReaderCreateWithFunctions(
        const_cast<redisReplyObjectFunctions*>(&bounded_functions().table));
    if (!reader_) throw std::bad_alloc();
    reader_->privdata = this;
}

RespReader::~RespReader() {
    redisReaderFree(reader_);
}

void RespReader::feed(const char* bytes, size_t size) {
    if (redisReaderFeed(reader_, bytes, size) != REDIS_OK)  // out of memory, or a bad reply before
        throw std::runtime_error(std::string("bad reply: ") + reader_->errstr);
}

bool RespReader::next(RedisReply& out) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
        if (refused_ > 0)
            throw std::runtime_error("bad reply: an array of " + std::to_string(refused_) +
                                     " elements, more than the " + std::to_string(kMaxElements) +
                                     " a reply may hold in all");
        throw std::runtime_error(std::string("bad reply: ") + reader_->errstr);
    }
    if (!raw) return false;
    elements_ = 0;
    ReplyPtr reply(raw);
    out = copy_reply(static_cast<redisReply*>(raw));
    return true;
}

}  // namespace server
