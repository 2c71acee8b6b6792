// sd_get_default_scheduler in the reference's order: an EDM v-prediction model takes
// exponential, lcm and tcd the LCM schedule, ddim_trailing the simple one, then the family's
// own (discrete for SD 1.x; FLUX's flux is pinned by the FLUX family test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fixture_files.h"
#include "stable-diffusion.h"

namespace {

sd_ctx_t* open_sd15(prediction_t prediction) {
    static const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    ::setenv("SD_TOKENIZER_DIR", (sd::test::fixtures_dir() + "/tokenizers").c_str(), 1);
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.model_path = model.c_str();
    cp.n_threads = 2;
    cp.prediction = prediction;
    return new_sd_ctx(&cp);
}

TEST(DefaultScheduler, FollowsTheReferenceOrder) {
    EXPECT_EQ(sd_get_default_scheduler(nullptr, EULER_SAMPLE_METHOD), DISCRETE_SCHEDULER);
    sd_ctx_t* ctx = open_sd15(PREDICTION_COUNT);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(sd_get_default_scheduler(ctx, EULER_SAMPLE_METHOD), DISCRETE_SCHEDULER);
    EXPECT_EQ(sd_get_default_scheduler(ctx, LCM_SAMPLE_METHOD), LCM_SCHEDULER);
    EXPECT_EQ(sd_get_default_scheduler(ctx, TCD_SAMPLE_METHOD), LCM_SCHEDULER);
    EXPECT_EQ(sd_get_default_scheduler(ctx, DDIM_TRAILING_SAMPLE_METHOD), SIMPLE_SCHEDULER);
    free_sd_ctx(ctx);

    sd_ctx_t* edm = open_sd15(EDM_V_PRED);
    ASSERT_NE(edm, nullptr);
    EXPECT_EQ(sd_get_default_scheduler(edm, EULER_SAMPLE_METHOD), EXPONENTIAL_SCHEDULER);
    EXPECT_EQ(sd_get_default_scheduler(edm, LCM_SAMPLE_METHOD), EXPONENTIAL_SCHEDULER);
    free_sd_ctx(edm);
}

}  // namespace
