// --queue's URL: host, port, credentials (with %-escapes), database, IPv6, and the errors.
#include "redis_url.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace server {
namespace {

TEST(RedisUrl, HostAndPort) {
    const RedisEndpoint e = parse_redis_url("redis://127.0.0.1:6380");
    EXPECT_EQ(e.host, "127.0.0.1");
    EXPECT_EQ(e.port, 6380);
    EXPECT_EQ(e.db, 0);
    EXPECT_TRUE(e.user.empty());
    EXPECT_TRUE(e.password.empty());
    EXPECT_EQ(e.display(), "127.0.0.1:6380/0");
}

TEST(RedisUrl, RedissIsTls) {
    const RedisEndpoint e = parse_redis_url("rediss://:pw@queue.lan:6380/2");
    EXPECT_TRUE(e.tls);
    EXPECT_EQ(e.host, "queue.lan");
    EXPECT_EQ(e.port, 6380);
    EXPECT_EQ(e.password, "pw");
    EXPECT_EQ(e.db, 2);
    EXPECT_EQ(e.display(), "queue.lan:6380/2 over TLS");
    EXPECT_FALSE(parse_redis_url("redis://queue.lan").tls);
}

TEST(RedisUrl, DefaultPortAndDatabase) {
    const RedisEndpoint e = parse_redis_url("redis://queue.lan/3");
    EXPECT_EQ(e.host, "queue.lan");
    EXPECT_EQ(e.port, 6379);
    EXPECT_EQ(e.db, 3);
    EXPECT_EQ(parse_redis_url("redis://h:1/").db, 0);
}

TEST(RedisUrl, Credentials) {
    const RedisEndpoint e = parse_redis_url("redis://sd:s3cret@10.0.0.5:6379/1");
    EXPECT_EQ(e.user, "sd");
    EXPECT_EQ(e.password, "s3cret");
    EXPECT_EQ(e.host, "10.0.0.5");
    EXPECT_EQ(e.db, 1);
    EXPECT_EQ(e.display(), "10.0.0.5:6379/1");  // no credentials in messages

    const RedisEndpoint only_password = parse_redis_url("redis://:pw@h:7000");
    EXPECT_EQ(only_password.user, "");
    EXPECT_EQ(only_password.password, "pw");
    EXPECT_EQ(parse_redis_url("redis://pw@h:7000").password, "pw");
}

TEST(RedisUrl, EscapedPasswordMayHoldAtAndColon) {
    const RedisEndpoint e = parse_redis_url("redis://u:p%40ss%3Aword@h:6379");
    EXPECT_EQ(e.password, "p@ss:word");
    EXPECT_EQ(e.host, "h");
    // An unescaped '@' in the password: the last '@' ends the credentials.
    EXPECT_EQ(parse_redis_url("redis://u:a@b@h:1").password, "a@b");
}

TEST(RedisUrl, Ipv6) {
    const RedisEndpoint e = parse_redis_url("redis://[::1]:6390/2");
    EXPECT_EQ(e.host, "::1");
    EXPECT_EQ(e.port, 6390);
    EXPECT_EQ(e.db, 2);
    EXPECT_EQ(e.display(), "[::1]:6390/2");
    EXPECT_EQ(parse_redis_url("redis://[::1]").port, 6379);
}

TEST(RedisUrl, Errors) {
    for (const char* bad :
         {"http://h:1", "h:6379", "redis://", "redis://:6379", "redis://h:", "redis://h:0",
          "redis://h:65536", "redis://h:12x", "redis://h:1/db", "redis://h:1/-1",
          "redis://u:%4@h:1", "redis://u:%zz@h:1", "redis://[::1:6379", "redis://[::1]x"}) {
        EXPECT_THROW(parse_redis_url(bad), std::invalid_argument) << bad;
    }
}

TEST(RedisUrl, ErrorsNameTheProblem) {
    try {
        parse_redis_url("redis://h:99999");
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("port"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace server
