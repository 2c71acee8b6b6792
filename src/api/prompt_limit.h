// This engine's extension to the C API: the prompt length limit of a context. A generation
// refuses a prompt (or negative prompt) longer than the limit before encoding it, checking
// its bytes before tokenizing so that megabytes are refused at once.
#pragma once

#include "stable-diffusion.h"

#define SD_DEFAULT_MAX_PROMPT_TOKENS 1500  // 20 CLIP chunks of 75
#define SD_MAX_PROMPT_BYTES_PER_TOKEN 32   // the byte check before tokenizing

#ifdef __cplusplus
extern "C" {
#endif

// The most tokens (75 a CLIP chunk) a prompt may have on `sd_ctx`; <= 0 lifts the limit.
SD_API void sd_ctx_set_max_prompt_tokens(sd_ctx_t* sd_ctx, int max_tokens);

#ifdef __cplusplus
}
#endif
