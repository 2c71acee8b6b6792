// The caching allocator's budgets per run: the cache limit is the sum of the live
// CacheBudgets (one context's small budget never shrinks another's share), a shrinking or
// ending budget frees the large blocks past the new limit, and trim() on a run's thread keeps
// what the other live runs' budgets cover.
#include "tensor/caching_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace sd {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

CachingAllocator& alloc() {
    return CachingAllocator::instance();
}

// Frees n blocks of `bytes` into the cache (allocated all at once, so they are distinct).
void cache_blocks(int n, size_t bytes) {
    std::vector<void*> blocks;
    for (int i = 0; i < n; ++i) blocks.push_back(alloc().allocate(bytes));
    for (void* p : blocks) alloc().deallocate(p, bytes);
}

bool caching() {  // under SD_SANITIZE the cache is bypassed
    void* p = alloc().allocate(4096);
    alloc().deallocate(p, 4096);
    const bool cached = alloc().stats().bytes_cached > 0;
    alloc().trim_all();
    return cached;
}

TEST(CacheBudget, TheLimitIsTheSumOfTheLiveBudgets) {
    const size_t idle = alloc().cache_limit();
    {
        CacheBudget a(100 * kMiB);
        EXPECT_EQ(alloc().cache_limit(), 100 * kMiB);
        {
            CacheBudget b(50 * kMiB);
            EXPECT_EQ(alloc().cache_limit(), 150 * kMiB);
            b.set(10 * kMiB);
            EXPECT_EQ(alloc().cache_limit(), 110 * kMiB);
            EXPECT_EQ(alloc().stats().live_budgets, 2u);
            EXPECT_EQ(alloc().stats().budget_bytes, 110 * kMiB);
        }
        EXPECT_EQ(alloc().cache_limit(), 100 * kMiB);
    }
    EXPECT_EQ(alloc().cache_limit(), idle);
    EXPECT_EQ(alloc().stats().live_budgets, 0u);
}

TEST(CacheBudget, AShrinkingBudgetFreesTheBlocksPastIt) {
    if (!caching()) GTEST_SKIP() << "the cache is bypassed in this build";
    CacheBudget run(64 * kMiB);
    cache_blocks(3, 16 * kMiB);
    EXPECT_EQ(alloc().stats().bytes_cached_large, 48 * kMiB);
    run.set(16 * kMiB);
    EXPECT_LE(alloc().stats().bytes_cached_large, 16 * kMiB);
    alloc().trim_all();
}

// Two runs on two threads: the first trims, the second's share stays cached; then the
// second trims alone and nothing stays.
TEST(CacheBudget, TrimKeepsTheOtherRunsShare) {
    if (!caching()) GTEST_SKIP() << "the cache is bypassed in this build";
    std::atomic<int> phase{0};
    std::thread other([&] {
        CacheBudget share(32 * kMiB);
        phase = 1;
        while (phase.load() != 2) std::this_thread::yield();
    });
    while (phase.load() != 1) std::this_thread::yield();
    {
        CacheBudget mine(64 * kMiB);
        cache_blocks(5, 16 * kMiB);  // 80 MiB freed, the limit is 96 MiB
        EXPECT_EQ(alloc().stats().bytes_cached_large, 80 * kMiB);
        cache_blocks(1, 1000);  // a small block
        alloc().trim();
        EXPECT_EQ(alloc().stats().bytes_cached_large, 32 * kMiB);  // the other run's share
        EXPECT_EQ(alloc().stats().bytes_cached, 32 * kMiB);        // small blocks go
    }
    phase = 2;
    other.join();
    alloc().trim();  // no run live: everything
    EXPECT_EQ(alloc().stats().bytes_cached, 0u);
}

TEST(CacheBudget, TrimOnAThreadWithoutARunKeepsEveryLiveShare) {
    if (!caching()) GTEST_SKIP() << "the cache is bypassed in this build";
    std::atomic<int> phase{0};
    std::thread run([&] {
        CacheBudget share(32 * kMiB);
        phase = 1;
        while (phase.load() != 2) std::this_thread::yield();
    });
    while (phase.load() != 1) std::this_thread::yield();
    cache_blocks(3, 16 * kMiB);
    alloc().trim();
    EXPECT_EQ(alloc().stats().bytes_cached_large, 32 * kMiB);
    alloc().trim_all();
    EXPECT_EQ(alloc().stats().bytes_cached, 0u);
    phase = 2;
    run.join();
}

}  // namespace
}  // namespace sd
