#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"

namespace sd {
namespace {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> hits(3);
    for (int round = 0; round < 100; ++round) {
        pool.run([&](int index, int count) {
            EXPECT_EQ(count, 3);
            hits[index]++;
        });
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 100);
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
    set_num_threads(2);
    for (int64_t n : {0, 1, 2, 3, 7, 100, 1001, 65537}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        parallel_for(n, 3, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
        });
        for (auto& s : seen) ASSERT_EQ(s.load(), 1) << "n=" << n;
        std::vector<std::atomic<int>> seen2(static_cast<size_t>(n));
        parallel_for_static(n, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) seen2[static_cast<size_t>(i)]++;
        });
        for (auto& s : seen2) ASSERT_EQ(s.load(), 1) << "static n=" << n;
    }
}

TEST(ThreadPool, NestedCallsRunInline) {
    set_num_threads(2);
    std::atomic<int64_t> total{0};
    parallel_for(8, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
            EXPECT_TRUE(in_parallel_region());
            parallel_for(10, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
        }
    });
    EXPECT_EQ(total.load(), 80);
    EXPECT_FALSE(in_parallel_region());
}

TEST(ThreadPool, ExceptionReachesCaller) {
    set_num_threads(2);
    EXPECT_THROW(parallel_for(100, 1,
                              [&](int64_t b, int64_t) {
                                  if (b >= 50) fail("task failed at %lld", (long long)b);
                              }),
                 Error);
    // The pool keeps working afterwards.
    std::atomic<int64_t> total{0};
    parallel_for(100, 1, [&](int64_t b, int64_t e) { total += e - b; });
    EXPECT_EQ(total.load(), 100);
}

TEST(ThreadPool, ResizeKeepsWorking) {
    for (int n : {1, 2, 4, 2}) {
        set_num_threads(n);
        EXPECT_EQ(num_threads(), n);
        EXPECT_GE(thread_pool().size(), n);  // grown, never shrunk
        std::atomic<int64_t> total{0};
        parallel_for(1000, 7, [&](int64_t b, int64_t e) { total += e - b; });
        EXPECT_EQ(total.load(), 1000);
    }
}

TEST(ThreadPool, RunWithACountCallsThatManyIndices) {
    ThreadPool pool(4);
    for (int count : {1, 2, 3, 4, 9}) {
        std::vector<std::atomic<int>> hits(4);
        std::atomic<int> seen_count{0};
        pool.run(count, [&](int index, int n) {
            seen_count = n;
            hits[index]++;
        });
        const int want = std::min(count, 4);
        EXPECT_EQ(seen_count.load(), want);
        for (int i = 0; i < 4; ++i) EXPECT_EQ(hits[i].load(), i < want ? 1 : 0) << count;
    }
}

TEST(ThreadPool, ScopedThreadCountIsTheCallingThreadsAndGrowsThePool) {
    set_num_threads(2);
    {
        const ScopedThreadCount three(3);
        EXPECT_EQ(num_threads(), 3);
        EXPECT_GE(thread_pool().size(), 3);
        std::atomic<int> inside{0};
        parallel_for_static(30, [&](int64_t, int64_t) { inside = num_threads(); });
        EXPECT_EQ(inside.load(), 3);                              // a task sees its run's count
        std::thread([] { EXPECT_EQ(num_threads(), 2); }).join();  // other threads: the default
        {
            const ScopedThreadCount keep(0);  // <= 0: no change
            EXPECT_EQ(num_threads(), 3);
        }
    }
    EXPECT_EQ(num_threads(), 2);
    set_num_threads(0);
}

// set_num_threads and new counts while another thread runs ops: nothing is rebuilt under it.
TEST(ThreadPool, CountsChangeSafelyWhileAnotherThreadRunsOps) {
    set_num_threads(2);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> wrong{0};
    std::thread ops([&] {
        const ScopedThreadCount two(2);
        while (!stop.load()) {
            std::atomic<int64_t> total{0};
            parallel_for(10000, 7, [&](int64_t b, int64_t e) { total += e - b; });
            if (total.load() != 10000) wrong++;
        }
    });
    for (int round = 0; round < 200; ++round) {
        set_num_threads(1 + round % 4);
        const ScopedThreadCount mine(1 + (round + 1) % 5);
        std::atomic<int64_t> total{0};
        parallel_for(1000, 3, [&](int64_t b, int64_t e) { total += e - b; });
        EXPECT_EQ(total.load(), 1000);
    }
    stop = true;
    ops.join();
    EXPECT_EQ(wrong.load(), 0);
    set_num_threads(0);
}

TEST(ThreadPool, ThreadsThatHelpClampsToUsableCpus) {
    const int cpus = usable_cpus();
    EXPECT_GE(cpus, 1);
    EXPECT_EQ(threads_that_help(1), 1);
    EXPECT_EQ(threads_that_help(cpus), cpus);
    EXPECT_EQ(threads_that_help(cpus + 14), cpus);
    EXPECT_EQ(threads_that_help(-1), -1);  // the default stays the default
    EXPECT_THROW(threads_that_help(100000), Error);
}

}  // namespace
}  // namespace sd
