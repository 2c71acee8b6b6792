// Host memory for tensors. Freed blocks are kept in size-class free lists and handed out
// again, so a forward pass that allocates the same activation sizes step after step stops
// calling the system allocator after its first step. trim() gives the cache back.
//
// Size classes: multiples of 64 bytes up to 4 KiB, then eight classes per power of two
// (at most 12.5% slack). Blocks are 64-byte aligned. Blocks of 4 MiB and more are mapped
// straight from the kernel, so freeing one really returns its memory; a large request may
// take a cached block of up to twice its size (resident already); the cache keeps at
// most cache_limit() bytes of them (a freed block past the limit is unmapped), because
// cached blocks of sizes nobody asks for again would otherwise add up to the sum of every
// phase's peak. Under SD_SANITIZE the cache is bypassed so AddressSanitizer sees every use
// after free.
//
// Budgets are per run. Each live run (a generation: pipeline/run_scope.h) holds a CacheBudget
// for its current phase; the cache may keep the SUM of the live budgets, so each context's
// run has its own share and one context's small budget never shrinks the cache under
// another's working set, nor does a large one let another's leftovers stay. The cache is
// shared (a block freed by one run may serve the other); what is bounded is its total.
// trim() is run-aware in the same way: called on a thread whose run holds a budget it frees
// what the OTHER live runs' budgets do not cover (everything when no other run is live),
// so a run dropping its cache between phases leaves the other runs' share in place.
#pragma once

#include <cstddef>

namespace sd {

struct AllocatorStats {
    size_t bytes_in_use = 0;        // handed out and not yet returned
    size_t bytes_cached = 0;        // returned and kept for reuse
    size_t bytes_cached_large = 0;  // of which blocks of 4 MiB and more
    size_t peak_in_use = 0;
    size_t live_budgets = 0;  // CacheBudgets alive now
    size_t budget_bytes = 0;  // their sum (the cache limit while any is alive)
};

class CachingAllocator {
  public:
    static CachingAllocator& instance();

    void* allocate(size_t bytes);
    void deallocate(void* ptr, size_t bytes);
    // Frees the cached blocks no other live run's budget covers: every small block, and
    // large blocks until at most (sum of the live budgets other than the calling thread's
    // own) bytes of them stay. With no budget live, or none but the caller's: everything.
    void trim();
    // Frees every cached block, whatever runs are live.
    void trim_all();
    // Bytes of large blocks the cache may keep: the sum of the live CacheBudgets, or this
    // process default (512 MiB) while none is alive.
    void set_cache_limit(size_t bytes);
    size_t cache_limit() const;
    AllocatorStats stats() const;
    // Rounded size a request of `bytes` really takes.
    static size_t size_class(size_t bytes);
};

// A run's share of the cache while it lives (a generation, sized per phase by set()). The
// cache limit is the sum of the live shares; when one ends (or shrinks), the large blocks
// past the new limit are freed. It is also the calling thread's own budget for trim() while
// it lives (budgets nest: the innermost is the thread's).
class CacheBudget {
  public:
    explicit CacheBudget(size_t bytes);
    ~CacheBudget();
    CacheBudget(const CacheBudget&) = delete;
    CacheBudget& operator=(const CacheBudget&) = delete;
    void set(size_t bytes);
    size_t bytes() const { return bytes_; }

  private:
    size_t bytes_;
    CacheBudget* previous_;  // the thread's budget before this one
};

}  // namespace sd
