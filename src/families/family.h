// What a model family declares: how to recognise its files, its defaults, its latent
// format, and how it builds the components the generation loop runs (pipeline/components.h).
// A family is one file in this folder with one `Family` value, listed in registry.cpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "pipeline/components.h"
#include "pipeline/load_options.h"
#include "sampling/samplers.h"

namespace sd {

// What a family uses when a request leaves a choice open (sd_get_default_sample_method /
// sd_get_default_scheduler; LCM always takes the LCM scheduler).
struct FamilyDefaults {
    SampleMethod method = EULER_A_SAMPLE_METHOD;
    Scheduler scheduler = DISCRETE_SCHEDULER;
};

struct Family {
    const char* name;  // "SDXL"
    // The variant the files hold ("SD 1.x inpaint"), or "" when they are not this family.
    // Looks at tensor names and shapes only.
    std::string (*detect)(const ModelFiles& files);
    FamilyDefaults defaults;
    LatentFormat latent;
    // Builds the components; nullptr for a family this build recognises but cannot run.
    ModelComponents (*assemble)(const ModelFiles& files, const LoadOptions& options) = nullptr;
    // Activation memory per pixel for the memory estimate (the UNet families' by default).
    ActivationFootprint footprint{};
    // Name fragments of this family's layers that -M convert leaves in their own dtype
    // (the reference tool's list: small, precision-sensitive input and output layers).
    std::span<const char* const> convert_keeps{};
};

}  // namespace sd
