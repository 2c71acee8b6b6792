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

// A component role a family takes (io/component_roles.h): a file given for a role no entry
// names is refused, naming its option; a required role the files lack is named with its
// option ("SD3 needs its T5-XXL text encoder (--t5xxl FILE)").
struct RoleUse {
    ModelRole role;
    bool required = false;
    const char* what = nullptr;  // the family's words for the part; nullptr: the role's name
    const char* hint = nullptr;  // put before the option in the message: "ae.safetensors: "
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
    // The component roles its files may be given as (besides -m, which every family takes).
    std::span<const RoleUse> roles{};
    // The models users know it by ("SD 1.4, SD 1.5, their fine-tunes and inpaint models"),
    // for sd-cli --list-families and the README's table.
    const char* models = nullptr;
};

// The family's words for a role it takes ("OpenCLIP ViT-H text encoder"), else the table's.
const char* role_words(const RoleUse& use);
// The RoleUse of `role` in `family`, or nullptr when it does not take the role.
const RoleUse* find_role_use(const Family& family, ModelRole role);
// Throws "<files>: SD3 needs its T5-XXL text encoder (--t5xxl FILE)" for `role`, which
// `family` must list.
[[noreturn]] void fail_missing_role(const ModelFiles& files, const Family& family, ModelRole role);

}  // namespace sd
