// The C API's sd_cache_params_t as the pipeline's settled StepCacheParams.
#pragma once

#include "sampling/cache_params.h"
#include "stable-diffusion.h"

namespace sd::api {

// Throws sd::Error naming the field for an unknown mode or a malformed scm_mask.
StepCacheParams to_step_cache(const sd_cache_params_t& c);

}  // namespace sd::api
