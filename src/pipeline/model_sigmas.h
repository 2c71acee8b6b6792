// The sigmas a loaded model samples with: the scheduler's over the denoiser's noise schedule,
// with the model's image-token count for the size-dependent schedulers (flux, flux2, ltx2),
// and for a model whose flow shift follows the request (ModelComponents::shift_from_tokens,
// FLUX.2) a schedule shifted by flux2_empirical_mu(tokens, steps), unless the request set the
// flow shift (`request_shift`: `d` carries it).
#pragma once

#include <vector>

#include "pipeline/components.h"

namespace sd {

std::vector<float> model_sigmas(const ModelComponents& m, const Denoiser& d, Scheduler scheduler,
                                int steps, int64_t width, int64_t height,
                                bool request_shift = false);

}  // namespace sd
