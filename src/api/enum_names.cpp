// The names of the C API's enums, spelled as stable-diffusion.cpp spells them on its command
// line and in its metadata; str_to_* is the exact inverse and returns *_COUNT otherwise.
#include <cstring>
#include <iterator>

#include "stable-diffusion.h"

// Exported as the reference exports them (bindings read them to list the choices).
extern "C" {
const char* sample_method_to_str[] = {
    "euler",         "euler_a",        "heun",    "dpm2",         "dpm++2s_a",      "dpm++2m",
    "dpm++2mv2",     "ipndm",          "ipndm_v", "lcm",          "ddim_trailing",  "tcd",
    "res_multistep", "res_2s",         "er_sde",  "euler_cfg_pp", "euler_a_cfg_pp", "euler_ge",
    "dpm++2m_sde",   "dpm++2m_sde_bt", "lms",
};

const char* scheduler_to_str[] = {
    "discrete",     "karras",     "exponential", "ays",  "gits",         "sgm_uniform",
    "simple",       "smoothstep", "kl_optimal",  "lcm",  "bong_tangent", "ltx2",
    "logit_normal", "flux2",      "flux",        "beta",
};
}

namespace {

const char kNone[] = "NONE";

struct TypeName {
    sd_type_t type;
    const char* name;
};

// GGML's type names (ggml_type_name) for every value of sd_type_t.
const TypeName kTypeNames[] = {
    {SD_TYPE_F32, "f32"},       {SD_TYPE_F16, "f16"},         {SD_TYPE_Q4_0, "q4_0"},
    {SD_TYPE_Q4_1, "q4_1"},     {SD_TYPE_Q5_0, "q5_0"},       {SD_TYPE_Q5_1, "q5_1"},
    {SD_TYPE_Q8_0, "q8_0"},     {SD_TYPE_Q8_1, "q8_1"},       {SD_TYPE_Q2_K, "q2_K"},
    {SD_TYPE_Q3_K, "q3_K"},     {SD_TYPE_Q4_K, "q4_K"},       {SD_TYPE_Q5_K, "q5_K"},
    {SD_TYPE_Q6_K, "q6_K"},     {SD_TYPE_Q8_K, "q8_K"},       {SD_TYPE_IQ2_XXS, "iq2_xxs"},
    {SD_TYPE_IQ2_XS, "iq2_xs"}, {SD_TYPE_IQ3_XXS, "iq3_xxs"}, {SD_TYPE_IQ1_S, "iq1_s"},
    {SD_TYPE_IQ4_NL, "iq4_nl"}, {SD_TYPE_IQ3_S, "iq3_s"},     {SD_TYPE_IQ2_S, "iq2_s"},
    {SD_TYPE_IQ4_XS, "iq4_xs"}, {SD_TYPE_I8, "i8"},           {SD_TYPE_I16, "i16"},
    {SD_TYPE_I32, "i32"},       {SD_TYPE_I64, "i64"},         {SD_TYPE_F64, "f64"},
    {SD_TYPE_IQ1_M, "iq1_m"},   {SD_TYPE_BF16, "bf16"},       {SD_TYPE_TQ1_0, "tq1_0"},
    {SD_TYPE_TQ2_0, "tq2_0"},   {SD_TYPE_MXFP4, "mxfp4"},     {SD_TYPE_NVFP4, "nvfp4"},
    {SD_TYPE_Q1_0, "q1_0"},
};

const char* const kRngNames[] = {"std_default", "cuda", "cpu"};

const char* const kPredictionNames[] = {"eps",       "v",         "edm_v",       "sd3_flow",
                                        "flux_flow", "sefi_flow", "minit2i_flow"};

const char* const kPreviewNames[] = {"none", "proj", "tae", "vae"};

const char* const kLoraApplyModeNames[] = {"auto", "immediately", "at_runtime"};

const char* const kHiresUpscalerNames[] = {
    "None",
    "Latent",
    "Latent (nearest)",
    "Latent (nearest-exact)",
    "Latent (antialiased)",
    "Latent (bicubic)",
    "Latent (bicubic antialiased)",
    "Lanczos",
    "Nearest",
    "Model",
};

static_assert(std::size(kRngNames) == RNG_TYPE_COUNT);
static_assert(std::size(sample_method_to_str) == SAMPLE_METHOD_COUNT);
static_assert(std::size(scheduler_to_str) == SCHEDULER_COUNT);
static_assert(std::size(kPredictionNames) == PREDICTION_COUNT);
static_assert(std::size(kPreviewNames) == PREVIEW_COUNT);
static_assert(std::size(kLoraApplyModeNames) == LORA_APPLY_MODE_COUNT);
static_assert(std::size(kHiresUpscalerNames) == SD_HIRES_UPSCALER_COUNT);

template <class Name, size_t N>
const char* name_of(Name (&names)[N], int value) {
    return value >= 0 && value < static_cast<int>(N) ? names[value] : kNone;
}

// Index of `str` in `names`, N when absent.
template <class Name, size_t N>
int index_of(Name (&names)[N], const char* str) {
    if (!str) return static_cast<int>(N);
    for (size_t i = 0; i < N; ++i)
        if (std::strcmp(str, names[i]) == 0) return static_cast<int>(i);
    return static_cast<int>(N);
}

}  // namespace

extern "C" {

const char* sd_type_name(enum sd_type_t type) {
    for (const TypeName& t : kTypeNames)
        if (t.type == type) return t.name;
    return kNone;
}

enum sd_type_t str_to_sd_type(const char* str) {
    if (!str) return SD_TYPE_COUNT;
    for (const TypeName& t : kTypeNames)
        if (std::strcmp(str, t.name) == 0) return t.type;
    return SD_TYPE_COUNT;
}

const char* sd_rng_type_name(enum rng_type_t rng_type) {
    return name_of(kRngNames, rng_type);
}

enum rng_type_t str_to_rng_type(const char* str) {
    return static_cast<rng_type_t>(index_of(kRngNames, str));
}

const char* sd_sample_method_name(enum sample_method_t sample_method) {
    return name_of(sample_method_to_str, sample_method);
}

enum sample_method_t str_to_sample_method(const char* str) {
    return static_cast<sample_method_t>(index_of(sample_method_to_str, str));
}

const char* sd_scheduler_name(enum scheduler_t scheduler) {
    return name_of(scheduler_to_str, scheduler);
}

enum scheduler_t str_to_scheduler(const char* str) {
    // "normal" is the reference's other name for discrete.
    if (str && std::strcmp(str, "normal") == 0) return DISCRETE_SCHEDULER;
    return static_cast<scheduler_t>(index_of(scheduler_to_str, str));
}

const char* sd_prediction_name(enum prediction_t prediction) {
    return name_of(kPredictionNames, prediction);
}

enum prediction_t str_to_prediction(const char* str) {
    return static_cast<prediction_t>(index_of(kPredictionNames, str));
}

const char* sd_preview_name(enum preview_t preview) {
    return name_of(kPreviewNames, preview);
}

enum preview_t str_to_preview(const char* str) {
    return static_cast<preview_t>(index_of(kPreviewNames, str));
}

const char* sd_lora_apply_mode_name(enum lora_apply_mode_t mode) {
    return name_of(kLoraApplyModeNames, mode);
}

enum lora_apply_mode_t str_to_lora_apply_mode(const char* str) {
    return static_cast<lora_apply_mode_t>(index_of(kLoraApplyModeNames, str));
}

const char* sd_hires_upscaler_name(enum sd_hires_upscaler_t upscaler) {
    return name_of(kHiresUpscalerNames, upscaler);
}

enum sd_hires_upscaler_t str_to_sd_hires_upscaler(const char* str) {
    return static_cast<sd_hires_upscaler_t>(index_of(kHiresUpscalerNames, str));
}

}  // extern "C"
