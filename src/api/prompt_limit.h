// The prompt length limit of a context (SD_DEFAULT_MAX_PROMPT_TOKENS,
// sd_ctx_set_max_prompt_tokens, sd_check_prompt_text) is declared with this engine's other
// C API additions in stable-diffusion-ext.h; this header stays for the programs that include
// it.
#pragma once

#include "stable-diffusion-ext.h"
