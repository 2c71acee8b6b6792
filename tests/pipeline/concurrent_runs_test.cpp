// Two contexts generating at once in one process (the sd15 fixture loaded twice): one
// computing in f32 on 1 thread, the other in bf16 on 2 threads. Run at the same time on two
// threads, each gives the image it gives alone, bit for bit; the two differ (so each really
// computed as it was asked); and when both have ended no kernel scratch is held.
#include <gtest/gtest.h>

#include <thread>

#include "base/thread_pool.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "ops/compute_type.h"
#include "ops/kernel_scratch.h"
#include "pipeline/generate.h"
#include "tensor/caching_allocator.h"
#include "test_util.h"

namespace sd {
namespace {

struct Context {
    ModelFiles files;
    LoadedModel model;
};

std::unique_ptr<Context> load(ComputeType compute, int threads) {
    auto ctx = std::make_unique<Context>();
    ctx->files.add(test::generated_checkpoint("sd15", "f16", 1), ModelRole::Checkpoint);
    LoadOptions options;
    options.tokenizer_dir = test::fixtures_dir() + "/tokenizers";
    options.memory.compute = compute;
    options.memory.threads = threads;
    ctx->model = load_model(ctx->files, options);
    return ctx;
}

ImageRequest request(int64_t seed) {
    ImageRequest r;
    r.prompt = "a lovely cat";
    r.negative_prompt = "blurry";
    r.width = r.height = 64;
    r.steps = 3;
    r.seed = seed;
    r.method = EULER_SAMPLE_METHOD;
    return r;
}

TEST(ConcurrentRuns, TwoContextsTogetherGiveTheImagesTheyGiveAlone) {
    if (!bf16_compute_supported()) GTEST_SKIP() << "no AVX512-BF16 here: f32 and bf16 agree";
    set_num_threads(2);
    const std::unique_ptr<Context> f32 = load(ComputeType::F32, 1);
    const std::unique_ptr<Context> bf16 = load(ComputeType::BF16, 2);
    const ImageRequest r = request(42);
    const std::vector<uint8_t> alone_f32 = generate_images(f32->model.components, r)[0].pixels;
    const std::vector<uint8_t> alone_bf16 = generate_images(bf16->model.components, r)[0].pixels;
    EXPECT_NE(alone_f32, alone_bf16);
    for (int round = 0; round < 2; ++round) {
        std::vector<uint8_t> together_f32, together_bf16;
        std::thread a([&] { together_f32 = generate_images(f32->model.components, r)[0].pixels; });
        std::thread b(
            [&] { together_bf16 = generate_images(bf16->model.components, r)[0].pixels; });
        a.join();
        b.join();
        EXPECT_EQ(together_f32, alone_f32) << "round " << round;
        EXPECT_EQ(together_bf16, alone_bf16) << "round " << round;
    }
    EXPECT_EQ(live_runs(), 0);
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
    EXPECT_EQ(CachingAllocator::instance().stats().bytes_cached, 0u);
    set_num_threads(0);
}

}  // namespace
}  // namespace sd
