#include "pipeline/prompt_length.h"

#include "base/error.h"
#include "pipeline/request.h"

namespace sd {

void check_prompt_bytes(std::string_view text, int max_tokens, const char* what) {
    SD_CHECK(text.find('\0') == std::string_view::npos,
             "the %s contains a NUL byte, which would cut it short: remove it", what);
    if (max_tokens <= 0) return;
    const size_t max_bytes = static_cast<size_t>(max_tokens) * kMaxPromptBytesPerToken;
    SD_CHECK(text.size() <= max_bytes,
             "the %s has %zu bytes, more than %d tokens could take (at most %zu bytes); "
             "shorten it or raise --max-prompt-tokens",
             what, text.size(), max_tokens, max_bytes);
}

void check_prompt_length(const ModelComponents& m, const std::string& prompt, int max_tokens,
                         const char* what) {
    check_prompt_bytes(prompt, max_tokens, what);
    if (max_tokens <= 0 || prompt.empty()) return;
    const size_t tokens = m.conditioner->count_tokens(prompt);
    SD_CHECK(tokens <= static_cast<size_t>(max_tokens),
             "the %s has %zu tokens, more than the limit of %d; shorten it or raise "
             "--max-prompt-tokens",
             what, tokens, max_tokens);
}

}  // namespace sd
