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
#pragma once

#include <cstddef>

namespace sd {

struct AllocatorStats {
    size_t bytes_in_use = 0;        // handed out and not yet returned
    size_t bytes_cached = 0;        // returned and kept for reuse
    size_t bytes_cached_large = 0;  // of which blocks of 4 MiB and more
    size_t peak_in_use = 0;
};

class CachingAllocator {
  public:
    static CachingAllocator& instance();

    void* allocate(size_t bytes);
    void deallocate(void* ptr, size_t bytes);
    // Frees every cached block back to the system.
    void trim();
    // Bytes of large blocks the cache may keep: the largest of the live CacheBudgets, or
    // this process default (512 MiB) while none is alive.
    void set_cache_limit(size_t bytes);
    size_t cache_limit() const;
    AllocatorStats stats() const;
    // Rounded size a request of `bytes` really takes.
    static size_t size_class(size_t bytes);
};

// A caller's wish for the cache limit while it lives (a generation, sized per phase). Several
// contexts generating at once each hold one; the allocator keeps the largest, so none
// shrinks the cache under another's working set.
class CacheBudget {
  public:
    explicit CacheBudget(size_t bytes);
    ~CacheBudget();
    CacheBudget(const CacheBudget&) = delete;
    CacheBudget& operator=(const CacheBudget&) = delete;
    void set(size_t bytes);

  private:
    size_t bytes_;
};

}  // namespace sd
