// The per-run state (pipeline/run_scope.h): a RunScope installs its compute type, thread
// count, cache budget and cancel token on its thread and puts back what was there; the ops
// started on that thread use its count while another thread's run uses its own; and when the
// last run ends the allocator's cache and the kernels' scratch hold no bytes.
#include "pipeline/run_scope.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ops/conv.h"
#include "ops/convert.h"
#include "ops/linear.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// A few ops of the kinds that grow every scratch slot: a product with a block-quant weight,
// a Winograd conv, a direct conv.
void some_ops() {
    linear(test::random_tensor({300, 1024}, 1),
           convert(test::random_tensor({512, 1024}, 2), DType::Q8_0), Tensor());
    Conv2dOptions opt;
    opt.pad_h = opt.pad_w = 1;
    opt.winograd = true;
    conv2d(test::random_tensor({1, 256, 24, 24}, 3), test::random_tensor({256, 256, 3, 3}, 4),
           Tensor(), opt);
    opt.winograd = false;
    conv2d(test::random_tensor({1, 64, 48, 48}, 5), test::random_tensor({16, 64, 3, 3}, 6),
           Tensor(), opt);
}

TEST(RunScope, InstallsItsStateAndPutsBackWhatWasThere) {
    const ComputeType before_type = compute_type();
    const int before_threads = num_threads();
    const CancelToken token;
    RunOptions o;
    o.compute = ComputeType::F32;
    o.threads = 1;
    o.cache_bytes = 96 * kMiB;
    o.cancel = &token;
    {
        RunScope run(o);
        EXPECT_EQ(compute_type(), ComputeType::F32);
        EXPECT_EQ(num_threads(), 1);
        EXPECT_EQ(current_cancel_token(), &token);
        EXPECT_EQ(CachingAllocator::instance().cache_limit(), 96 * kMiB);
        EXPECT_EQ(live_runs(), 1);
        run.cache().set(10 * kMiB);
        EXPECT_EQ(CachingAllocator::instance().cache_limit(), 10 * kMiB);
    }
    EXPECT_EQ(compute_type(), before_type);
    EXPECT_EQ(num_threads(), before_threads);
    EXPECT_EQ(current_cancel_token(), nullptr);
    EXPECT_EQ(live_runs(), 0);
}

TEST(RunScope, OptionsLeftOutKeepTheThreadsState) {
    const ScopedComputeType outer(ComputeType::F32);
    const ScopedThreadCount outer_threads(1);
    RunScope run(RunOptions{});
    EXPECT_EQ(compute_type(), ComputeType::F32);
    EXPECT_EQ(num_threads(), 1);
}

TEST(RunScope, AfterTheLastRunNothingStaysCachedOrInScratch) {
    set_num_threads(2);
    const size_t in_use = CachingAllocator::instance().stats().bytes_in_use;
    {
        RunScope run(RunOptions{});
        some_ops();
        EXPECT_GT(kernel_scratch_stats().bytes, 0u);
    }
    const AllocatorStats after = CachingAllocator::instance().stats();
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
    EXPECT_EQ(after.bytes_cached, 0u);
    EXPECT_EQ(after.bytes_in_use, in_use);
    set_num_threads(0);
}

// Two runs on two threads at once, one with 1 thread and one with 2: each op sees its own
// run's count, and both end with nothing held.
TEST(RunScope, TwoRunsAtOnceEachUseTheirOwnThreadCount) {
    set_num_threads(2);
    std::atomic<int> wrong{0};
    auto body = [&](int threads) {
        RunOptions o;
        o.threads = threads;
        RunScope run(o);
        for (int round = 0; round < 20; ++round) {
            parallel_for_static(64, [&](int64_t, int64_t) {
                if (num_threads() != threads) wrong++;
            });
            some_ops();
        }
    };
    std::thread a(body, 1), b(body, 2);
    a.join();
    b.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
    EXPECT_EQ(CachingAllocator::instance().stats().bytes_cached, 0u);
    set_num_threads(0);
}

}  // namespace
}  // namespace sd
