// The AUTOMATIC1111 prompt-attention syntax, as its parse_prompt_attention:
//   (text) multiplies the weight of text by 1.1, [text] by 1/1.1, (text:1.3) by 1.3,
//   \( \) \[ \] \\ are literal characters, unbalanced brackets close at the end, and
//   BREAK (a word of its own, upper case) starts a new 75-token chunk.
// Runs of equal weight are merged.
#pragma once

#include <string>
#include <vector>

namespace sd {

struct WeightedText {
    std::string text;
    float weight = 1.0f;
    bool is_break = false;  // a BREAK marker (text empty)

    bool operator==(const WeightedText& o) const {
        return text == o.text && weight == o.weight && is_break == o.is_break;
    }
};

std::vector<WeightedText> parse_prompt_attention(const std::string& prompt);

}  // namespace sd
