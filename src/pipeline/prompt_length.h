// The prompt length limit, checked in one place for the C API, the CLI and the server: a
// prompt (or negative prompt) may have at most `max_tokens` tokens (<= 0: no limit). Its
// bytes are checked first (kMaxPromptBytesPerToken a token, pipeline/request.h) so that
// megabytes are refused at once, without tokenizing them; then its tokens, before any
// encoder runs. settle_request checks both; the programs reach the byte check before a
// model loads through the C API (sd_check_prompt_text, stable-diffusion-ext.h).
#pragma once

#include <string>
#include <string_view>

#include "pipeline/components.h"

namespace sd {

// Refuses a text with a NUL byte (a C string would cut it short) or with more bytes than
// `max_tokens` tokens could take. Throws sd::Error naming `what` ("prompt") and
// --max-prompt-tokens.
void check_prompt_bytes(std::string_view text, int max_tokens, const char* what);

// check_prompt_bytes, then the token count of the model's conditioner against `max_tokens`.
void check_prompt_length(const ModelComponents& model, const std::string& prompt, int max_tokens,
                         const char* what);

}  // namespace sd
