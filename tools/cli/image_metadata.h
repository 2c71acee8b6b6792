// The "parameters" text embedded in each generated image, in the reference program's
// layout: the prompt, "Negative prompt: ...", then "Steps: 20, CFG scale: 7.000000,
// Guidance: ..., Seed: 42, Size: 512x512, Model: NAME, RNG: cuda, Sampler: euler_a
// discrete, ..., Version: stable-diffusion.cpp, SDCPP: {JSON}".
#pragma once

#include <cstdint>
#include <string>

#include "cli_params.h"
#include "generation_request.h"

namespace cli {

std::string image_parameters(const CliParams& params, const GenerationRequest& request,
                             int64_t seed);

// The JSON after "SDCPP: " (schema sdcpp.image.params/v1, keys sorted).
std::string sdcpp_metadata_json(const CliParams& params, const GenerationRequest& request,
                                int64_t seed);

// The file name part of a path.
std::string base_name(const std::string& path);

}  // namespace cli
