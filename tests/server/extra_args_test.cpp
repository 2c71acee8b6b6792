#include "extra_args.h"

#include <gtest/gtest.h>

#include "request_error.h"

namespace server {
namespace {

TEST(ServerExtraArgs, TakesTheBlockOutOfThePrompt) {
    ExtraArgs x = extract_extra_args(
        "a cat <sd_cpp_extra_args>{\"seed\": 5}</sd_cpp_extra_args> in the rain", "prompt");
    EXPECT_EQ(x.prompt, "a cat  in the rain");
    ASSERT_TRUE(x.json_text);
    EXPECT_EQ(*x.json_text, "{\"seed\": 5}");
}

TEST(ServerExtraArgs, LeavesAPromptWithoutABlockAlone) {
    ExtraArgs x = extract_extra_args("a cat <b>bold</b>", "prompt");
    EXPECT_EQ(x.prompt, "a cat <b>bold</b>");
    EXPECT_FALSE(x.json_text);
}

TEST(ServerExtraArgs, RefusesUnterminatedStrayAndRepeatedBlocks) {
    for (const char* prompt :
         {"a <sd_cpp_extra_args>{}", "a </sd_cpp_extra_args>",
          "<sd_cpp_extra_args>{}</sd_cpp_extra_args><sd_cpp_extra_args>{}</sd_cpp_extra_args>"}) {
        try {
            extract_extra_args(prompt, "prompt");
            ADD_FAILURE() << prompt;
        } catch (const RequestError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.field(), "prompt");
        }
    }
}

}  // namespace
}  // namespace server
