#include "name_maps.h"

#include <gtest/gtest.h>

namespace server {
namespace {

TEST(ServerNameMaps, ReadsNativeWebuiAndKDiffusionSamplerNames) {
    EXPECT_EQ(sampler_from_name("euler_a")->method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("Euler a")->method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("k_euler_a")->method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("DPM++ 2M")->method, DPMPP2M_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("dpm++2m")->method, DPMPP2M_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("DDIM")->method, DDIM_TRAILING_SAMPLE_METHOD);
    EXPECT_EQ(sampler_from_name("default")->method, SAMPLE_METHOD_COUNT);
    EXPECT_EQ(sampler_from_name("")->method, SAMPLE_METHOD_COUNT);
    EXPECT_FALSE(sampler_from_name("string"));
    EXPECT_FALSE(sampler_from_name("DPM adaptive"));
}

TEST(ServerNameMaps, OldWebuiLabelsCarryTheirSchedule) {
    auto choice = sampler_from_name("DPM++ 2M Karras");
    ASSERT_TRUE(choice);
    EXPECT_EQ(choice->method, DPMPP2M_SAMPLE_METHOD);
    EXPECT_EQ(choice->scheduler, KARRAS_SCHEDULER);
    EXPECT_EQ(sampler_from_name("Euler")->scheduler, SCHEDULER_COUNT);
}

TEST(ServerNameMaps, ReadsSchedulerNames) {
    EXPECT_EQ(scheduler_from_name("karras"), KARRAS_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("Karras"), KARRAS_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("Align Your Steps"), AYS_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("sgm_uniform"), SGM_UNIFORM_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("SGM Uniform"), SGM_UNIFORM_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("Automatic"), SCHEDULER_COUNT);
    EXPECT_EQ(scheduler_from_name("Normal"), DISCRETE_SCHEDULER);
    EXPECT_EQ(scheduler_from_name("Beta"), BETA_SCHEDULER);
    EXPECT_FALSE(scheduler_from_name("Bogus"));
}

TEST(ServerNameMaps, EveryNativeNameReadsBack) {
    for (const std::string& name : native_sampler_names())
        EXPECT_EQ(sd_sample_method_name(sampler_from_name(name)->method), name);
    for (const std::string& name : native_scheduler_names())
        EXPECT_EQ(sd_scheduler_name(*scheduler_from_name(name)), name);
}

}  // namespace
}  // namespace server
