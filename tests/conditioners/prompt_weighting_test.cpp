#include "conditioners/prompt_weighting.h"

#include <gtest/gtest.h>

#include "cancel_after.h"

namespace sd {
namespace {

// Expected values follow AUTOMATIC1111's parse_prompt_attention docstring examples.
std::vector<WeightedText> W(std::initializer_list<std::pair<const char*, float>> items) {
    std::vector<WeightedText> out;
    for (auto& [t, w] : items) out.push_back({t, w, false});
    return out;
}

void expect_parse(const std::string& prompt, const std::vector<WeightedText>& want) {
    std::vector<WeightedText> got = parse_prompt_attention(prompt);
    ASSERT_EQ(got.size(), want.size()) << prompt;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].text, want[i].text) << prompt << " #" << i;
        EXPECT_NEAR(got[i].weight, want[i].weight, 1e-6) << prompt << " #" << i;
        EXPECT_EQ(got[i].is_break, want[i].is_break) << prompt << " #" << i;
    }
}

TEST(PromptWeighting, Automatic1111Examples) {
    expect_parse("normal text", W({{"normal text", 1.0f}}));
    expect_parse("an (important) word", W({{"an ", 1.0f}, {"important", 1.1f}, {" word", 1.0f}}));
    expect_parse("(unbalanced", W({{"unbalanced", 1.1f}}));
    expect_parse("\\(literal\\]", W({{"(literal]", 1.0f}}));
    expect_parse("(unnecessary)(parens)", W({{"unnecessaryparens", 1.1f}}));
    expect_parse("a (((house:1.3)) [on] a (hill:0.5), sun, (((sky))).", W({{"a ", 1.0f},
                                                                           {"house", 1.5730000f},
                                                                           {" ", 1.1f},
                                                                           {"on", 1.0f},
                                                                           {" a ", 1.1f},
                                                                           {"hill", 0.55f},
                                                                           {", sun, ", 1.1f},
                                                                           {"sky", 1.4641001f},
                                                                           {".", 1.1f}}));
}

TEST(PromptWeighting, ReferenceCasePrompt) {
    expect_parse("a (lovely:1.3) cat, [blurry] sunset", W({{"a ", 1.0f},
                                                           {"lovely", 1.3f},
                                                           {" cat, ", 1.0f},
                                                           {"blurry", 1.0f / 1.1f},
                                                           {" sunset", 1.0f}}));
}

TEST(PromptWeighting, EdgeCases) {
    expect_parse("", W({{"", 1.0f}}));
    expect_parse("a:b", W({{"a:b", 1.0f}}));
    expect_parse("x :1.5) y", W({{"x :1.5) y", 1.0f}}));  // a weight outside brackets is text
    expect_parse("]])) stray", W({{"]])) stray", 1.0f}}));
    expect_parse("a \\ b", W({{"a  b", 1.0f}}));
    expect_parse("(a:-0.5)", W({{"a", -0.5f}}));
    expect_parse("(a: 2 )", W({{"a", 2.0f}}));
    std::vector<WeightedText> b = parse_prompt_attention("one BREAK two");
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].text, "one");
    EXPECT_TRUE(b[1].is_break);
    EXPECT_EQ(b[2].text, "two");
    EXPECT_EQ(parse_prompt_attention("BREAKFAST").size(), 1u);
    std::string deep(100000, '(');
    EXPECT_EQ(parse_prompt_attention(deep + "x").size(), 1u);  // no recursion, no blow-up
}

// 200k unclosed brackets, each over the pieces after it: quadratic work (seconds), which a
// cancel still ends at once.
TEST(PromptWeighting, HostileBracketsAreCancellable) {
    std::string prompt;
    for (int i = 0; i < 200000; ++i) prompt += "(a";
    CancelToken token;
    const CancelScope scope(&token);
    test::CancelAfter canceller(token, 100);
    EXPECT_THROW(parse_prompt_attention(prompt), Cancelled);
    const double ended = canceller.ended();
    EXPECT_LT(ended, 2.0) << "seconds from the cancel to the end";
    std::printf("200k open brackets: ended %.3f s after the cancel\n", ended);
}

}  // namespace
}  // namespace sd
