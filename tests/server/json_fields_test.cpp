#include "json_fields.h"

#include <gtest/gtest.h>

#include "request_error.h"
#include "request_test_util.h"

namespace server {
namespace {

using nlohmann::json;

template <class F>
void expect_error(F f, const std::string& field, int status = 400) {
    test::expect_request_error(f, field, "", status);
}

TEST(ServerFieldReader, ReadsEachTypeAndTreatsNullAsAbsent) {
    const json body = json::parse(R"({"s": "text", "i": 20, "f": 20.0, "d": 0.5, "b": true,
        "b01": 1, "n": null, "arr": [1, 2.5], "ints": [7, 8], "strs": ["a"], "o": {"k": 3}})");
    FieldReader f(body);
    EXPECT_EQ(f.string("s"), "text");
    EXPECT_EQ(f.integer("i", 1, 100), 20);
    EXPECT_EQ(f.integer("f", 1, 100), 20);
    EXPECT_DOUBLE_EQ(*f.number("d", 0, 1), 0.5);
    EXPECT_EQ(f.boolean("b"), true);
    EXPECT_EQ(f.boolean("b01"), true);
    EXPECT_FALSE(f.string("n"));
    EXPECT_FALSE(f.has("n"));
    EXPECT_FALSE(f.integer("missing", 0, 1));
    EXPECT_EQ(f.numbers("arr", 0, 10)->size(), 2u);
    EXPECT_EQ(*f.integers("ints", 0, 10), (std::vector<int>{7, 8}));
    EXPECT_EQ(*f.strings("strs"), std::vector<std::string>{"a"});
    auto nested = f.object("o");
    ASSERT_TRUE(nested);
    EXPECT_EQ(nested->name("k"), "o.k");
    EXPECT_EQ(nested->integer("k", 0, 5), 3);
    EXPECT_EQ(f.int64("i"), 20);
}

TEST(ServerFieldReader, NamesTheFieldOfEveryWrongValue) {
    const json body = json::parse(R"({"s": 5, "i": "20", "big": 1e300, "frac": 2.5, "neg": -3,
        "b": "yes", "arr": [1, "x"], "o": [1], "huge": 18446744073709551615,
        "nested": {"deeper": {"x": true}}})");
    FieldReader f(body);
    expect_error([&] { f.string("s"); }, "s");
    expect_error([&] { f.integer("i", 0, 100); }, "i");
    expect_error([&] { f.integer("big", 0, 100); }, "big");
    expect_error([&] { f.integer("frac", 0, 100); }, "frac");
    expect_error([&] { f.integer("neg", 0, 100); }, "neg");
    expect_error([&] { f.number("big", 0, 100); }, "big");
    expect_error([&] { f.boolean("b"); }, "b");
    expect_error([&] { f.numbers("arr", 0, 10); }, "arr[1]");
    expect_error([&] { f.object("o"); }, "o");
    expect_error([&] { f.int64("huge"); }, "huge");
    auto deeper = f.object("nested")->object("deeper");
    expect_error([&] { deeper->integer("x", 0, 1); }, "nested.deeper.x");
}

TEST(ServerParseJsonObject, RefusesEmptyInvalidNonObjectAndDeepBodies) {
    EXPECT_EQ(parse_json_object(R"({"a": 1})", "")["a"], 1);
    expect_error([] { parse_json_object("", ""); }, "");
    expect_error([] { parse_json_object("{\"a\": ", ""); }, "");
    expect_error([] { parse_json_object("[1, 2]", ""); }, "");
    expect_error([] { parse_json_object("\"text\"", ""); }, "");
    expect_error([] { parse_json_object("{\"a\": \"\xff\"}", ""); }, "");
    expect_error([] { parse_json_object(std::string(100000, '[') + std::string(100000, ']'), ""); },
                 "");
    expect_error(
        [] {
            parse_json_object("{\"x\":" + std::string(40, '[') + std::string(40, ']') + "}",
                              "extra");
        },
        "extra");
}

}  // namespace
}  // namespace server
