// CancelToken, its thread scope, and how far it reaches: parallel_for stops part-way on one
// thread and on several, every op checks it before it starts, and one large op (a matmul of
// a size that takes seconds) ends within 2 s of the cancel (milliseconds when the machine is idle).
#include "base/cancel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/thread_pool.h"
#include "cancel_after.h"
#include "ops/ops.h"

namespace sd {
namespace {

TEST(Cancel, TokenThrowsOnceCancelledAndScopesNest) {
    CancelToken a, b;
    EXPECT_EQ(current_cancel_token(), nullptr);
    EXPECT_NO_THROW(cancellation_point());
    {
        const CancelScope outer(&a);
        EXPECT_EQ(current_cancel_token(), &a);
        {
            const CancelScope inner(&b);
            EXPECT_EQ(current_cancel_token(), &b);
            const CancelScope keep(nullptr);  // no token of its own: b stays current
            EXPECT_EQ(current_cancel_token(), &b);
        }
        EXPECT_EQ(current_cancel_token(), &a);
        a.cancel();
        EXPECT_THROW(cancellation_point(), Cancelled);
        a.reset();
        EXPECT_NO_THROW(a.check());
    }
    EXPECT_EQ(current_cancel_token(), nullptr);
    // Another thread has no current token.
    const CancelScope scope(&a);
    a.cancel();
    std::thread([] { EXPECT_EQ(current_cancel_token(), nullptr); }).join();
}

TEST(Cancel, ParallelForStopsPartWay) {
    const int threads = num_threads();
    for (int n : {1, 2}) {
        set_num_threads(n);
        CancelToken token;
        const CancelScope scope(&token);
        std::atomic<int64_t> done{0};
        EXPECT_THROW(parallel_for(1000, 1,
                                  [&](int64_t b, int64_t e) {
                                      done += e - b;
                                      token.cancel();
                                  }),
                     Cancelled)
            << n << " threads";
        EXPECT_LT(done.load(), 1000) << n << " threads: the chunks after the cancel are skipped";
        // Not cancelled: the whole range, as without a token.
        token.reset();
        done = 0;
        parallel_for(1000, 1, [&](int64_t b, int64_t e) { done += e - b; });
        EXPECT_EQ(done.load(), 1000);
    }
    set_num_threads(threads);
}

TEST(Cancel, OpsCheckBeforeTheyStart) {
    CancelToken token;
    const CancelScope scope(&token);
    const Tensor x = Tensor::full({256, 256}, 1.0f);
    EXPECT_NO_THROW(matmul(x, x));
    token.cancel();
    EXPECT_THROW(matmul(x, x), Cancelled);
}

// 6144^3 multiply-adds (464 GFLOP: seconds on any CPU), cancelled 50 ms in; generous bound
// (a busy shared machine delays the pool threads).
TEST(Cancel, ALargeOpEndsSoonAfterTheCancel) {
    const Tensor a = Tensor::full({6144, 6144}, 0.5f);
    CancelToken token;
    const CancelScope scope(&token);
    test::CancelAfter canceller(token, 50);
    EXPECT_THROW(matmul(a, a), Cancelled);
    const double ended = canceller.ended();
    EXPECT_LT(ended, 2.0) << "seconds from the cancel to the op's end (2 ms unloaded)";
    std::printf("matmul 6144^3: ended %.3f s after the cancel\n", ended);
}

}  // namespace
}  // namespace sd
