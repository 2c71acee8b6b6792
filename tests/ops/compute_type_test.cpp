// The process-wide compute-type switch: names, parsing, and the fallback to f32 where the
// CPU or the build cannot compute in bf16.
#include "ops/compute_type.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/cpu_features.h"

namespace sd {
namespace {

TEST(ComputeType, NamesAndParsing) {
    ComputeType t = ComputeType::BF16;
    ASSERT_TRUE(parse_compute_type("f32", &t));
    EXPECT_EQ(t, ComputeType::F32);
    ASSERT_TRUE(parse_compute_type("bf16", &t));
    EXPECT_EQ(t, ComputeType::BF16);
    EXPECT_FALSE(parse_compute_type("fp16", &t));
    EXPECT_FALSE(parse_compute_type("", &t));
    EXPECT_EQ(t, ComputeType::BF16);
    EXPECT_STREQ(compute_type_name(ComputeType::F32), "f32");
    EXPECT_STREQ(compute_type_name(ComputeType::BF16), "bf16");
    ASSERT_TRUE(parse_compute_type("auto", &t));
    EXPECT_EQ(t, ComputeType::Auto);
    EXPECT_STREQ(compute_type_name(ComputeType::Auto), "auto");
}

TEST(ComputeType, DefaultsToAutoAndFallsBackWithoutSupport) {
    // Auto where bf16 can run, else f32 (silently).
    EXPECT_EQ(compute_type(), bf16_compute_supported() ? ComputeType::Auto : ComputeType::F32);
    EXPECT_EQ(supported_compute_type(ComputeType::Auto), compute_type());
#ifdef SD_X86_KERNELS
    EXPECT_EQ(bf16_compute_supported(),
              cpu_features().avx512bf16 && best_supported_isa() == Isa::Avx512);
#else
    EXPECT_FALSE(bf16_compute_supported());
#endif
    const ComputeType got = set_compute_type(ComputeType::BF16);
    EXPECT_EQ(got, bf16_compute_supported() ? ComputeType::BF16 : ComputeType::F32);
    EXPECT_EQ(compute_type(), got);
    // A second request gives the same answer (the warning is printed once).
    EXPECT_EQ(set_compute_type(ComputeType::BF16), got);
    EXPECT_EQ(set_compute_type(ComputeType::F32), ComputeType::F32);
    EXPECT_EQ(compute_type(), ComputeType::F32);
    EXPECT_FALSE(bf16_products(DType::BF16));
    set_compute_type(ComputeType::Auto);
    EXPECT_EQ(bf16_products(DType::BF16), bf16_compute_supported());
    EXPECT_FALSE(bf16_products(DType::F16));
    EXPECT_FALSE(bf16_products(DType::F32));
}

TEST(ComputeType, ScopedOverrideIsPerThreadAndRestored) {
    ASSERT_EQ(set_compute_type(ComputeType::F32), ComputeType::F32);
    const ComputeType want = supported_compute_type(ComputeType::BF16);
    {
        ScopedComputeType scope(ComputeType::BF16);
        EXPECT_EQ(compute_type(), want);
        ComputeType other = ComputeType::BF16;
        std::thread([&] { other = compute_type(); }).join();
        EXPECT_EQ(other, ComputeType::F32);  // another context's thread keeps its own
        {
            ScopedComputeType inner(ComputeType::F32);
            EXPECT_EQ(compute_type(), ComputeType::F32);
        }
        EXPECT_EQ(compute_type(), want);
    }
    EXPECT_EQ(compute_type(), ComputeType::F32);
    set_compute_type(ComputeType::Auto);
}

}  // namespace
}  // namespace sd
