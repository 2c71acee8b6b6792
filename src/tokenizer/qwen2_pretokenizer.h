// The pre-tokenization of stable-diffusion.cpp's Qwen2 tokenizer: how it reads UTF-8 and how
// it splits a text (without special tokens) into the pieces BPE encodes one by one. Its own
// hand-written form of Qwen2's pattern, which differs from Hugging Face's regex in a few
// places (README.md lists them); the reference's ids are what we match.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sd::qwen2 {

// The reference's UTF-8 reader: a byte that cannot start a character (a stray continuation
// byte, F8-FF) is skipped; a lead byte takes the next 1-3 bytes as its continuation without
// checking them; a character cut off by the end of the text ends the text. Never fails.
std::u32string decode_like_reference(std::string_view text);

// Calls emit(piece) for each piece of `text`, in order. The pieces are UTF-8 of the code
// points read as above (a contraction in lower case), so they need not be bytes of `text`.
void split_pieces(std::string_view text, const std::function<void(std::string_view)>& emit);

// The pieces as strings (for tests and debugging).
std::vector<std::string> pieces(std::string_view text);

}  // namespace sd::qwen2
