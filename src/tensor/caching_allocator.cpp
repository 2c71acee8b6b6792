#include "tensor/caching_allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
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
    size_t budget_count = 0;                 // live CacheBudgets
    size_t budget_sum = 0;                   // and their bytes
    size_t effective_limit() const { return budget_count == 0 ? large_limit : budget_sum; }
};

// The calling thread's innermost live CacheBudget.
thread_local CacheBudget* t_budget = nullptr;

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

// Frees cached large blocks, the largest first, until at most `keep` bytes of them stay;
// with small, every small cached block too. s.mutex held.
void free_cached(State& s, size_t keep, bool small) {
    for (auto it = s.free_lists.rbegin(); it != s.free_lists.rend(); ++it) {
        const size_t cls = it->first;
        std::vector<void*>& list = it->second;
        if (cls >= kLargeBlock) {
            while (!list.empty() && s.stats.bytes_cached_large > keep) {
                system_free(list.back(), cls);
                list.pop_back();
                s.stats.bytes_cached -= cls;
                s.stats.bytes_cached_large -= cls;
            }
        } else if (small) {
            for (void* p : list) system_free(p, cls);
            s.stats.bytes_cached -= cls * list.size();
            list.clear();
        }
    }
    std::erase_if(s.free_lists, [](const auto& e) { return e.second.empty(); });
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
    const size_t own = t_budget ? t_budget->bytes() : 0;
    free_cached(s, s.budget_sum - std::min(own, s.budget_sum), /*small=*/true);
}

void CachingAllocator::trim_all() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    free_cached(s, 0, /*small=*/true);
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

CacheBudget::CacheBudget(size_t bytes) : bytes_(bytes), previous_(t_budget) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budget_count += 1;
    s.budget_sum += bytes_;
    s.stats.live_budgets = s.budget_count;
    s.stats.budget_bytes = s.budget_sum;
    t_budget = this;
}

CacheBudget::~CacheBudget() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budget_count -= 1;
    s.budget_sum -= bytes_;
    s.stats.live_budgets = s.budget_count;
    s.stats.budget_bytes = s.budget_sum;
    if (t_budget == this) t_budget = previous_;
    free_cached(s, s.effective_limit(), /*small=*/false);  // the limit may have shrunk
}

void CacheBudget::set(size_t bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.budget_sum = s.budget_sum - bytes_ + bytes;
    bytes_ = bytes;
    s.stats.budget_bytes = s.budget_sum;
    free_cached(s, s.effective_limit(), /*small=*/false);
}

AllocatorStats CachingAllocator::stats() const {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.stats;
}

}  // namespace sd
