// What the Redis queue stores in a job's hash and a worker's heartbeat, written and read back
// (redis_records.h), and RESP replies parsed however their bytes arrive (redis_reply.h). What
// another process left there can be anything: a result that cannot be read names its field, an
// unreadable preview or heartbeat is ignored, and none of them throws the JSON library's
// exceptions (which the routes would answer as the client's mistake); a reply's arrays are
// bounded.
#include "redis_records.h"

#include <gtest/gtest.h>

#include "redis_reply.h"

namespace server {
namespace {

using namespace redis_records;

TEST(RedisRecords, EachValueReadsBackAsWritten) {
    const std::vector<ResultImage> images = {{"aGk=", -5, "a cat", 4294967295u, 64, 0},
                                             {"", 9007199254740993, "", 1, 2, 17}};
    const auto back = read_result(result_text(images));
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].b64, "aGk=");
    EXPECT_EQ((*back)[0].seed, -5);
    EXPECT_EQ((*back)[0].width, 4294967295u);
    EXPECT_EQ((*back)[1].seed, 9007199254740993);  // beyond a double's integers
    EXPECT_EQ((*back)[1].frames, 17);
    EXPECT_TRUE(read_result("")->empty());

    const auto preview = read_preview(preview_text({3, 1, "cG5n", 8, 16}));
    ASSERT_TRUE(preview);
    EXPECT_EQ(preview->step, 3);
    EXPECT_EQ(preview->image, 1);
    EXPECT_EQ(preview->png_b64, "cG5n");
    EXPECT_EQ(preview->height, 16u);

    const Heartbeat beat = read_heartbeat(heartbeat_text({"h:1:ab", "sd15", "job_1", 77}));
    EXPECT_EQ(beat.name, "h:1:ab");
    EXPECT_EQ(beat.model, "sd15");
    EXPECT_EQ(beat.job, "job_1");
    EXPECT_EQ(beat.pid, 77);

    const Payload p = read_payload(payload_text({"native", {{"prompt", "a"}}}, -1));
    EXPECT_EQ(p.source.kind, "native");
    EXPECT_EQ(p.source.body["prompt"], "a");
    EXPECT_EQ(p.seed, -1);
}

TEST(RedisRecords, AnUnreadableResultOrPayloadIsNamed) {
    for (const char* text :
         {"{", "{}", "[1]", R"([{"seed":"5"}])", R"([{"width":-1}])", R"([{"width":4294967296}])",
          R"([{"frames":1.5}])", R"([{"b64":7}])", R"([{"seed":18446744073709551615}])"}) {
        try {
            read_result(text);
            ADD_FAILURE() << "read " << text;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("result"), std::string::npos) << e.what();
        }
    }
    for (const char* text : {"", "[]", R"({"body":{}})", R"({"kind":5,"body":{}})",
                             R"({"kind":"native"})", R"({"kind":"native","body":{},"seed":"1"})"}) {
        try {
            read_payload(text);
            ADD_FAILURE() << "read " << text;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("payload"), std::string::npos) << e.what();
        }
    }
}

TEST(RedisRecords, AnUnreadablePreviewOrHeartbeatIsIgnored) {
    for (const char* text : {"", "x", "[]", R"({"step":"3"})", R"({"width":-2})", R"({"png":1})"})
        EXPECT_FALSE(read_preview(text)) << text;
    const Heartbeat beat = read_heartbeat(R"({"name":1,"model":["sd15"],"job":"job_2","pid":"7"})");
    EXPECT_EQ(beat.name, "");
    EXPECT_EQ(beat.model, "");
    EXPECT_EQ(beat.job, "job_2");
    EXPECT_EQ(beat.pid, 0);
    EXPECT_EQ(read_heartbeat("not json").job, "");
}

std::vector<RedisReply> replies_of(const std::string& bytes, size_t piece) {
    RespReader reader;
    std::vector<RedisReply> out;
    for (size_t at = 0; at < bytes.size(); at += piece) {
        reader.feed(bytes.data() + at, std::min(piece, bytes.size() - at));
        for (RedisReply r; reader.next(r);) out.push_back(std::move(r));
    }
    return out;
}

TEST(RespReader, RepliesAreTheSameHoweverTheBytesArrive) {
    const std::string bytes =
        "+OK\r\n:-42\r\n$5\r\nhe\r\no\r\n$-1\r\n-LOADING Redis is loading\r\n"
        "*2\r\n$1\r\na\r\n*1\r\n:7\r\n";
    for (size_t piece : {size_t{1}, size_t{3}, bytes.size()}) {
        const std::vector<RedisReply> r = replies_of(bytes, piece);
        ASSERT_EQ(r.size(), 6u) << piece;
        EXPECT_EQ(r[0].type, RedisReply::Type::Status);
        EXPECT_EQ(r[1].integer, -42);
        EXPECT_EQ(r[2].str, "he\r\no");  // a bulk string's bytes, CR LF included
        EXPECT_TRUE(r[3].is_nil());
        EXPECT_TRUE(r[4].is_transient_error());
        ASSERT_EQ(r[5].elements.size(), 2u);
        EXPECT_EQ(r[5].elements[1].elements[0].text(), "7");
    }
}

TEST(RespReader, BytesThatAreNoRespAreRefusedByName) {
    RespReader reader;
    reader.feed("?what\r\n", 7);
    RedisReply r;
    try {
        reader.next(r);
        ADD_FAILURE() << "parsed";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("bad reply"), std::string::npos) << e.what();
    }
    EXPECT_THROW(reader.feed("+OK\r\n", 5), std::runtime_error);  // the reader stays refused
}

// hiredis allocates an array's slots from its header: a reply claiming billions of elements
// (a hostile or broken server) is refused at once, not allocated (fuzz_redis_records: 86 s
// and 16 GB of page faults on "*2000000000").
TEST(RespReader, AReplysArraysAreBoundedInAll) {
    for (const std::string& bytes : {std::string("*2000000000\r\n$1\r\na\r\n"),
                                     std::string("*3\r\n*2000000\r\n*2000000\r\n*2000000\r\n")}) {
        RespReader reader;
        reader.feed(bytes.data(), bytes.size());
        RedisReply r;
        try {
            reader.next(r);
            ADD_FAILURE() << "parsed " << bytes;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("more than the"), std::string::npos) << e.what();
        }
    }
    // Each reply has the whole allowance: many replies with large arrays pass.
    RespReader reader;
    const long long half = RespReader::kMaxElements / 2 + 1;
    std::string big = "*" + std::to_string(half) + "\r\n";
    for (long long i = 0; i < half; ++i) big += ":1\r\n";
    for (int n = 0; n < 2; ++n) {
        reader.feed(big.data(), big.size());
        RedisReply r;
        ASSERT_TRUE(reader.next(r));
        EXPECT_EQ(r.elements.size(), static_cast<size_t>(half));
    }
}

}  // namespace
}  // namespace server
