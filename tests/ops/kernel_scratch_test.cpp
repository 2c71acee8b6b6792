// The kernels' scratch arena (ops/kernel_scratch.h): leases reuse a thread's buffer from call
// to call and count its bytes; a slot taken twice on one thread is refused; a run's end gives
// back its thread's buffers and the last run's end every thread's (the pool's workers
// included), or, for a thread inside a lease, when the lease ends; and the kernels' bounds
// (gemm_scratch_bound, conv_direct_scratch_bound, winograd_scratch_bound) hold what the
// GEMM, direct and Winograd convolutions really take, and not far more.
#include "ops/kernel_scratch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <tuple>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/compute_type.h"
#include "ops/conv.h"
#include "ops/convert.h"
#include "ops/linear.h"
#include "tensor/caching_allocator.h"
#include "test_util.h"

namespace sd {
namespace {

class KernelScratch : public testing::Test {
  protected:
    void SetUp() override {
        release_kernel_scratch();
        ASSERT_EQ(kernel_scratch_stats().bytes, 0u);
    }
    void TearDown() override { release_kernel_scratch(); }
};

TEST_F(KernelScratch, ALeaseReusesItsBufferAndCountsItsBytes) {
    float* first = nullptr;
    {
        const ScratchLease lease(ScratchSlot::GemmBlock, 1000);
        first = lease.data();
        ASSERT_NE(first, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
        first[999] = 1.0f;
    }
    const KernelScratchStats after = kernel_scratch_stats();
    EXPECT_EQ(after.bytes, scratch_buffer_bytes(1000));
    EXPECT_EQ(after.buffers, 1u);
    {
        const ScratchLease again(ScratchSlot::GemmBlock, 500);  // smaller: the same buffer
        EXPECT_EQ(again.data(), first);
    }
    {
        const ScratchLease other(ScratchSlot::GemmDequant, 10);  // another slot: its own
        EXPECT_NE(other.data(), first);
    }
    EXPECT_EQ(kernel_scratch_stats().buffers, 2u);
    const ScratchLease none(ScratchSlot::ConvBand, 0);
    EXPECT_EQ(none.data(), nullptr);
    release_thread_scratch();
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
}

TEST_F(KernelScratch, GrownBuffersAreZeroWhereAsked) {
    {
        const ScratchLease dirty(ScratchSlot::ConvBand, 64);
        for (int i = 0; i < 64; ++i) dirty.data()[i] = 7.0f;
    }
    const ScratchLease grown(ScratchSlot::ConvBand, 100000, /*zero_grown=*/true);
    for (int i = 0; i < 100000; i += 997) ASSERT_EQ(grown.data()[i], 0.0f) << i;
}

TEST_F(KernelScratch, ASlotTakenTwiceOnOneThreadIsRefused) {
    const ScratchLease lease(ScratchSlot::WinogradRows, 16);
    try {
        const ScratchLease twice(ScratchSlot::WinogradRows, 16);
        ADD_FAILURE() << "taken twice";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("winograd rows"), std::string::npos) << e.what();
    }
}

// Another thread's buffers wait for its lease to end; then they go at once.
TEST_F(KernelScratch, ABusyThreadFreesItsBuffersWhenItsLeaseEnds) {
    std::atomic<int> phase{0};
    std::thread worker([&] {
        {
            const ScratchLease lease(ScratchSlot::GemmBlock, 100000);
            lease.data()[0] = 1.0f;
            phase = 1;
            while (phase.load() != 2) std::this_thread::yield();
            lease.data()[99999] = 2.0f;  // still ours
        }
        phase = 3;
        while (phase.load() != 4) std::this_thread::yield();
    });
    while (phase.load() != 1) std::this_thread::yield();
    release_kernel_scratch();
    EXPECT_GE(kernel_scratch_stats().bytes, scratch_buffer_bytes(100000));
    phase = 2;
    while (phase.load() != 3) std::this_thread::yield();
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
    phase = 4;
    worker.join();
}

TEST_F(KernelScratch, AThreadsBuffersGoWhenItExits) {
    std::thread([] { const ScratchLease lease(ScratchSlot::GemmBlock, 5000); }).join();
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
}

// The arena's bytes after a Winograd conv (512 -> 512, the AutoencoderKL's widest) and a 3x3
// direct conv inside a run, on every pool thread: all of it goes when the run ends.
TEST_F(KernelScratch, TheLastRunTakesEveryThreadsBuffers) {
    set_num_threads(2);
    ASSERT_EQ(live_runs(), 0);
    {
        const ScratchRun run;
        EXPECT_EQ(live_runs(), 1);
        const ScopedComputeType f32(ComputeType::F32);
        Conv2dOptions opt;
        opt.pad_h = opt.pad_w = 1;
        opt.winograd = true;
        conv2d(test::random_tensor({1, 512, 16, 16}, 1), test::random_tensor({512, 512, 3, 3}, 2),
               Tensor(), opt);
        opt.winograd = false;
        conv2d(test::random_tensor({1, 64, 40, 40}, 3), test::random_tensor({32, 64, 3, 3}, 4),
               Tensor(), opt);
        EXPECT_GT(kernel_scratch_stats().bytes, size_t{30} << 20);  // U alone is 36 MiB
        {
            const ScratchRun other;  // a second run ends: the first keeps the workers' buffers
            EXPECT_EQ(live_runs(), 2);
        }
    }
    EXPECT_EQ(live_runs(), 0);
    EXPECT_EQ(kernel_scratch_stats().bytes, 0u);
    set_num_threads(0);
}

// The bounds against what the kernels take: at least as much, and within a small factor.
size_t scratch_after(const std::function<void()>& op) {
    release_kernel_scratch();
    op();
    return kernel_scratch_stats().bytes;
}

TEST_F(KernelScratch, WinogradBoundHoldsWhatItTakes) {
    const ScopedComputeType f32(ComputeType::F32);
    set_num_threads(2);
    for (const auto& [c, o, side] : {std::tuple{512, 512, 16}, std::tuple{512, 512, 96},
                                     std::tuple{64, 64, 200}, std::tuple{128, 256, 40}}) {
        Conv2dOptions opt;
        opt.pad_h = opt.pad_w = 1;
        opt.winograd = true;
        const Tensor x = test::random_tensor({1, c, side, side}, 1);
        const Tensor w = test::random_tensor({o, c, 3, 3}, 2);
        const size_t took = scratch_after([&] { conv2d(x, w, Tensor(), opt); });
        const ScratchBound b = winograd_scratch_bound(c, o);
        const double bound = b.per_thread * 2 + b.per_call;
        EXPECT_LE(static_cast<double>(took), bound) << c << " -> " << o << " at " << side;
        EXPECT_GE(static_cast<double>(took), 0.3 * bound) << c << " -> " << o << " at " << side;
    }
    set_num_threads(0);
}

TEST_F(KernelScratch, DirectConvBoundHoldsWhatItTakes) {
    const ScopedComputeType f32(ComputeType::F32);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const auto& [c, o, side] :
             {std::tuple{64, 32, 64}, std::tuple{128, 3, 300}, std::tuple{320, 4, 128}}) {
            Conv2dOptions opt;
            opt.pad_h = opt.pad_w = 1;
            const Tensor x = test::random_tensor({1, c, side, side}, 1);
            const Tensor w = test::random_tensor({o, c, 3, 3}, 2);
            const size_t took = scratch_after([&] { conv2d(x, w, Tensor(), opt); });
            const ScratchBound b = conv_direct_scratch_bound(c, 3, 3, side + 2, side, threads);
            EXPECT_LE(static_cast<double>(took), b.per_thread * threads)
                << c << " at " << side << ", " << threads << " threads";
            EXPECT_GE(static_cast<double>(took), 0.5 * b.per_thread)
                << c << " at " << side << ", " << threads << " threads";
        }
    }
    set_num_threads(0);
}

TEST_F(KernelScratch, GemmBoundHoldsWhatItTakes) {
    set_num_threads(2);
    for (ComputeType type : {ComputeType::F32, ComputeType::BF16}) {
        const ScopedComputeType compute(type);
        for (const auto& [m, n, k, dtype] :
             {std::tuple{512, 256, 3072, DType::F32}, std::tuple{77, 3072, 768, DType::Q8_0},
              std::tuple{4096, 320, 1280, DType::F16}, std::tuple{1, 3072, 15360, DType::Q4_K},
              std::tuple{64, 4096, 2048, DType::BF16}}) {
            const Tensor x = test::random_tensor({m, k}, 1);
            const Tensor w = convert(test::random_tensor({n, k}, 2), dtype);
            const size_t took = scratch_after([&] { linear(x, w, Tensor()); });
            const ScratchBound b = gemm_scratch_bound(k);
            EXPECT_LE(static_cast<double>(took), b.per_thread * 2)
                << m << "x" << n << "x" << k << " " << dtype_name(dtype) << " "
                << compute_type_name(type);
        }
    }
    set_num_threads(0);
}

}  // namespace
}  // namespace sd
