// The C API's enum names: every value round-trips, the spellings are the reference's, and
// unknown names / values give *_COUNT / "NONE".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stable-diffusion.h"

namespace {

template <class E>
void expect_round_trip(int count, const char* (*name)(E), E (*parse)(const char*)) {
    for (int i = 0; i < count; ++i) {
        const E value = static_cast<E>(i);
        const char* text = name(value);
        ASSERT_NE(text, nullptr);
        EXPECT_STRNE(text, "NONE") << i;
        EXPECT_EQ(parse(text), value) << text;
    }
    EXPECT_STREQ(name(static_cast<E>(count)), "NONE");
    EXPECT_STREQ(name(static_cast<E>(-7)), "NONE");
    EXPECT_EQ(parse("no such name"), static_cast<E>(count));
    EXPECT_EQ(parse(""), static_cast<E>(count));
    EXPECT_EQ(parse(nullptr), static_cast<E>(count));
}

template <class E>
std::vector<std::string> names(int count, const char* (*name)(E)) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) out.push_back(name(static_cast<E>(i)));
    return out;
}

TEST(EnumNames, EveryEnumRoundTrips) {
    expect_round_trip<rng_type_t>(RNG_TYPE_COUNT, sd_rng_type_name, str_to_rng_type);
    expect_round_trip<sample_method_t>(SAMPLE_METHOD_COUNT, sd_sample_method_name,
                                       str_to_sample_method);
    expect_round_trip<scheduler_t>(SCHEDULER_COUNT, sd_scheduler_name, str_to_scheduler);
    expect_round_trip<prediction_t>(PREDICTION_COUNT, sd_prediction_name, str_to_prediction);
    expect_round_trip<preview_t>(PREVIEW_COUNT, sd_preview_name, str_to_preview);
    expect_round_trip<lora_apply_mode_t>(LORA_APPLY_MODE_COUNT, sd_lora_apply_mode_name,
                                         str_to_lora_apply_mode);
    expect_round_trip<sd_hires_upscaler_t>(SD_HIRES_UPSCALER_COUNT, sd_hires_upscaler_name,
                                           str_to_sd_hires_upscaler);
}

TEST(EnumNames, ReferenceSpellings) {
    EXPECT_EQ(names<rng_type_t>(RNG_TYPE_COUNT, sd_rng_type_name),
              (std::vector<std::string>{"std_default", "cuda", "cpu"}));
    EXPECT_EQ(names<sample_method_t>(SAMPLE_METHOD_COUNT, sd_sample_method_name),
              (std::vector<std::string>{"euler",         "euler_a",        "heun",
                                        "dpm2",          "dpm++2s_a",      "dpm++2m",
                                        "dpm++2mv2",     "ipndm",          "ipndm_v",
                                        "lcm",           "ddim_trailing",  "tcd",
                                        "res_multistep", "res_2s",         "er_sde",
                                        "euler_cfg_pp",  "euler_a_cfg_pp", "euler_ge",
                                        "dpm++2m_sde",   "dpm++2m_sde_bt", "lms"}));
    EXPECT_EQ(
        names<scheduler_t>(SCHEDULER_COUNT, sd_scheduler_name),
        (std::vector<std::string>{"discrete", "karras", "exponential", "ays", "gits", "sgm_uniform",
                                  "simple", "smoothstep", "kl_optimal", "lcm", "bong_tangent",
                                  "ltx2", "logit_normal", "flux2", "flux", "beta"}));
    EXPECT_EQ(names<prediction_t>(PREDICTION_COUNT, sd_prediction_name),
              (std::vector<std::string>{"eps", "v", "edm_v", "sd3_flow", "flux_flow", "sefi_flow",
                                        "minit2i_flow"}));
    EXPECT_EQ(names<preview_t>(PREVIEW_COUNT, sd_preview_name),
              (std::vector<std::string>{"none", "proj", "tae", "vae"}));
    EXPECT_EQ(names<lora_apply_mode_t>(LORA_APPLY_MODE_COUNT, sd_lora_apply_mode_name),
              (std::vector<std::string>{"auto", "immediately", "at_runtime"}));
    EXPECT_EQ(
        names<sd_hires_upscaler_t>(SD_HIRES_UPSCALER_COUNT, sd_hires_upscaler_name),
        (std::vector<std::string>{"None", "Latent", "Latent (nearest)", "Latent (nearest-exact)",
                                  "Latent (antialiased)", "Latent (bicubic)",
                                  "Latent (bicubic antialiased)", "Lanczos", "Nearest", "Model"}));
    // The exported arrays hold the same names.
    for (int i = 0; i < SAMPLE_METHOD_COUNT; ++i)
        EXPECT_STREQ(sample_method_to_str[i],
                     sd_sample_method_name(static_cast<sample_method_t>(i)));
    for (int i = 0; i < SCHEDULER_COUNT; ++i)
        EXPECT_STREQ(scheduler_to_str[i], sd_scheduler_name(static_cast<scheduler_t>(i)));
    EXPECT_EQ(str_to_scheduler("normal"), DISCRETE_SCHEDULER);
    // Names are case-sensitive, as in the reference.
    EXPECT_EQ(str_to_sample_method("Euler"), SAMPLE_METHOD_COUNT);
}

TEST(EnumNames, WeightTypes) {
    const std::pair<sd_type_t, const char*> expected[] = {
        {SD_TYPE_F32, "f32"},   {SD_TYPE_F16, "f16"},       {SD_TYPE_BF16, "bf16"},
        {SD_TYPE_Q4_0, "q4_0"}, {SD_TYPE_Q4_1, "q4_1"},     {SD_TYPE_Q5_0, "q5_0"},
        {SD_TYPE_Q5_1, "q5_1"}, {SD_TYPE_Q8_0, "q8_0"},     {SD_TYPE_Q2_K, "q2_K"},
        {SD_TYPE_Q3_K, "q3_K"}, {SD_TYPE_Q4_K, "q4_K"},     {SD_TYPE_Q5_K, "q5_K"},
        {SD_TYPE_Q6_K, "q6_K"}, {SD_TYPE_IQ4_NL, "iq4_nl"}, {SD_TYPE_IQ4_XS, "iq4_xs"},
        {SD_TYPE_I32, "i32"},   {SD_TYPE_Q8_K, "q8_K"},     {SD_TYPE_MXFP4, "mxfp4"}};
    for (const auto& [type, name] : expected) {
        EXPECT_STREQ(sd_type_name(type), name);
        EXPECT_EQ(str_to_sd_type(name), type);
    }
    int named = 0;
    for (int i = 0; i < SD_TYPE_COUNT; ++i) {
        const char* name = sd_type_name(static_cast<sd_type_t>(i));
        if (std::string(name) == "NONE") continue;  // ids GGUF retired
        EXPECT_EQ(str_to_sd_type(name), static_cast<sd_type_t>(i)) << name;
        ++named;
    }
    EXPECT_EQ(named, 34);
    EXPECT_STREQ(sd_type_name(SD_TYPE_COUNT), "NONE");
    EXPECT_EQ(str_to_sd_type("q4_k"), SD_TYPE_COUNT);
    EXPECT_EQ(str_to_sd_type(nullptr), SD_TYPE_COUNT);
}

}  // namespace
