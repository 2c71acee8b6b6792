#include "tensor/caching_allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/error.h"

namespace sd {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kLargeBlock = size_t{4} << 20;

struct State {
    std::mutex mutex;
    std::map<size_t, std::vector<void*>> free_lists;  // by size class
    std::unordered_map<void*, size_t> large_in_use;   // large block -> its real class
    AllocatorStats stats;
    size_t large_limit = size_t{512} << 20;  // the process default
    std::multiset<size_t> budgets;           // live CacheBudgets
    size_t effective_limit() const { return budgets.empty() ? large_limit : *budgets.rbegin(); }
};

State& state() {
    static State* s = new State();  // never destroyed: tensors may die during static teardown
    return *s;
}

#ifdef SD_SANITIZE_BUILD
constexpr bool kCache = false;
constexpr bool kMapLarge = false;  // AddressSanitizer watches malloc'd memory only
#else
constexpr bool kCache = true;
constexpr bool kMapLarge = true;
#endif

bool is_mapped(size_t cls) {
    return kMapLarge && cls >= kLargeBlock;
}

void* system_allocate(size_t cls) {
    if (is_mapped(cls)) {
        // Backed by transparent huge pages where the kernel offers them (2 MiB pages: a
        // 1 GiB activation takes 512 TLB entries instead of 262144, and is zeroed in 512
        // faults), then populated at once: a tensor is written whole, and one call that maps
        // every page costs far less than a page fault each (most of all under
        // virtualisation).
        void* p = ::mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) fail("out of memory mapping %zu bytes", cls);
        ::madvise(p, cls, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
        const bool populated = ::madvise(p, cls, MADV_POPULATE_WRITE) == 0;
#else
        const bool populated = false;
#endif
        if (!populated) {
            // Older kernels: fault the pages in one by one (a huge page at a time with THP).
            for (size_t off = 0; off < cls; off += 4096) static_cast<volatile char*>(p)[off] = 0;
        }
        return p;
    }
    void* p = std::aligned_alloc(kAlignment, cls);
    if (!p) fail("out of memory allocating %zu bytes", cls);
    return p;
}

void system_free(void* p, size_t cls) {
    if (is_mapped(cls)) {
        ::munmap(p, cls);
    } else {
        std::free(p);
    }
}

}  // namespace

CachingAllocator& CachingAllocator::instance() {
    static CachingAllocator allocator;
    return allocator;
}

size_t CachingAllocator::size_class(size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (bytes <= 4096) return (bytes + 63) / 64 * 64;
    // Eight steps between consecutive powers of two.
    size_t top = size_t{1} << (63 - __builtin_clzll(bytes - 1) + 1);  // next power of two >= bytes
    size_t step = top / 16;
    return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
    size_t cls = size_class(bytes);
    const bool large = cls >= kLargeBlock;
    State& s = state();
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        // A large request may take a cached block of up to twice its size: its pages are
        // resident already, where a fresh block would add to RSS and fault every page in.
        auto it = s.free_lists.lower_bound(cls);
        const size_t top = large ? 2 * cls : cls + 1;
        while (it != s.free_lists.end() && it->first < top && it->second.empty()) ++it;
        void* p = nullptr;
        if (it != s.free_lists.end() && it->first < top) {
            cls = it->first;
            p = it->second.back();
            it->second.pop_back();
            s.stats.bytes_cached -= cls;
            if (large) s.stats.bytes_cached_large -= cls;
        }
        s.stats.bytes_in_use += cls;
        if (s.stats.bytes_in_use > s.stats.peak_in_use) s.stats.peak_in_use = s.stats.bytes_in_use;
        if (p) {
            if (large) s.large_in_use[p] = cls;
            return p;
        }
    }
    void* p = nullptr;
    try {
        p = system_allocate(cls);
    } catch (...) {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.stats.bytes_in_use -= cls;
        throw;
    }
    if (large) {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.large_in_use[p] = cls;
    }
    return p;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
    if (!ptr) return;
    size_t cls = size_class(bytes);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (cls >= kLargeBlock) {
        if (const auto it = s.large_in_use.find(ptr); it != s.large_in_use.end()) {
            cls = it->second;
            s.large_in_use.erase(it);
        }
    }
    s.stats.bytes_in_use -= cls;
    const bool large = cls >= kLargeBlock;
    if (!kCache || (large && s.stats.bytes_cached_large + cls > s.effective_limit())) {
        system_free(ptr, cls);
        return;
    }
    s.free_lists[cls].push_back(ptr);
    s.stats.bytes_cached += cls;
    if (large) s.stats.bytes_cached_large += cls;
}

void CachingAllocator::trim() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto& [cls, list] : s.free_lists) {
        for (void* p : list) system_free(p, cls);
    }
    s.free_lists.clear();
    s.stats.bytes_cached = 0;
    s.stats.bytes_cached_large = 0;
}

void CachingAllocator::set_cache_limit(size_t bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.large_limit = bytes;
}

size_t CachingAllocator::cache_limit() const {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.effective_limit();
}

CacheBudget::CacheBudget(size_t bytes) : bytes_(bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budgets.insert(bytes_);
}

CacheBudget::~CacheBudget() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budgets.erase(s.budgets.find(bytes_));
}

void CacheBudget::set(size_t bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budgets.erase(s.budgets.find(bytes_));
    bytes_ = bytes;
    s.budgets.insert(bytes_);
}

AllocatorStats CachingAllocator::stats() const {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.stats;
}

}  // namespace sd
