// What sd-server reads back from Redis, on arbitrary bytes: the RESP replies of the
// connection (RespReader, hiredis's parser beneath) and the job-hash values another process
// wrote (redis_records.h: a worker's payload, which it replays through the request parsers,
// a job's result and preview, a worker's heartbeat). Input: K BYTES, K one byte choosing the
// reader. Findings: an exception other than those the readers name (std::runtime_error from
// the RESP reader and the result/payload readers, RequestError 4xx from the replay), any from
// the preview and heartbeat readers; replies that differ when the same bytes arrive in pieces;
// a result that reads back differently after being written.
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "fuzz_server_util.h"
#include "redis_records.h"
#include "redis_reply.h"
#include "request_error.h"
#include "request_replay.h"

namespace {

using server::RedisReply;

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "FUZZ FINDING: %s\n", what);
    std::abort();
}

bool same(const RedisReply& a, const RedisReply& b) {
    if (a.type != b.type || a.integer != b.integer || a.str != b.str ||
        a.elements.size() != b.elements.size())
        return false;
    for (size_t i = 0; i < a.elements.size(); ++i)
        if (!same(a.elements[i], b.elements[i])) return false;
    return true;
}

uint64_t touch(const RedisReply& r) {
    uint64_t sum = r.text().size() + static_cast<uint64_t>(r.is_transient_error());
    try {
        r.expect("fuzz");
    } catch (const std::runtime_error&) {
        ++sum;  // an error reply (RedisError is a runtime_error)
    }
    for (const RedisReply& e : r.elements) sum += touch(e);
    return sum;
}

// Every reply in `bytes`, fed in pieces of `piece` bytes (0: at once); false when the
// reader refused the bytes.
bool parse(const std::string& bytes, size_t piece, std::vector<RedisReply>& out) {
    server::RespReader reader;
    try {
        for (size_t at = 0; at < bytes.size();) {
            const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
            reader.feed(bytes.data() + at, n);
            at += n;
            for (RedisReply r; reader.next(r);) out.push_back(std::move(r));
        }
    } catch (const std::runtime_error&) {
        return false;
    }
    return true;
}

void resp(const std::string& bytes, size_t piece) {
    std::vector<RedisReply> whole, pieces;
    const bool ok_whole = parse(bytes, 0, whole);
    const bool ok_pieces = parse(bytes, piece, pieces);
    // Refused or not, the replies before the refusal are the same however the bytes came.
    if (ok_whole != ok_pieces) finding("the same bytes parse or fail depending on how they came");
    if (whole.size() != pieces.size()) finding("the same bytes gave a different reply count");
    for (size_t i = 0; i < whole.size(); ++i)
        if (!same(whole[i], pieces[i])) finding("the same bytes gave a different reply");
    for (const RedisReply& r : whole) sd::fuzz::sink = touch(r);
}

void result(const std::string& text) {
    std::shared_ptr<const std::vector<server::ResultImage>> images;
    try {
        images = server::redis_records::read_result(text);
    } catch (const std::runtime_error&) {
        return;
    }
    const auto again =
        server::redis_records::read_result(server::redis_records::result_text(*images));
    if (again->size() != images->size()) finding("a result read back with another image count");
    for (size_t i = 0; i < images->size(); ++i) {
        const server::ResultImage &a = (*images)[i], &b = (*again)[i];
        if (a.b64 != b.b64 || a.seed != b.seed || a.parameters != b.parameters ||
            a.width != b.width || a.height != b.height || a.frames != b.frames)
            finding("a result read back with other values");
    }
}

void payload(const std::string& text) {
    server::redis_records::Payload p;
    try {
        p = server::redis_records::read_payload(text);
    } catch (const std::runtime_error&) {
        return;
    }
    server::ServerLimits limits;
    limits.max_side = 256;  // images of the body are decoded: keep them small
    try {
        const server::JobSpec spec = server::replay_request(
            p.source, p.seed, server::ParseContext{sd::fuzz::server_command_line(), limits});
        sd::fuzz::sink = spec.request.prompt.size() + static_cast<uint64_t>(spec.request.width);
    } catch (const server::RequestError& e) {
        if (e.status() < 400 || e.status() >= 500) finding("a replayed request refused as 5xx");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        switch (data[0] % 5) {
            case 0:
                resp(text, 1 + data[0] / 5);
                break;
            case 1:
                result(text);
                break;
            case 2:
                payload(text);
                break;
            case 3:
                if (auto p = server::redis_records::read_preview(text))
                    sd::fuzz::sink = p->png_b64.size() + static_cast<uint64_t>(p->step);
                break;
            default: {
                const auto beat = server::redis_records::read_heartbeat(text);
                sd::fuzz::sink = beat.name.size() + beat.job.size() + beat.model.size();
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FUZZ FINDING: %s escaped: %s\n", typeid(e).name(), e.what());
        std::abort();
    }
    return 0;
}
