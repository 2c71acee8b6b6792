#include "ops/kernel_scratch.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "tensor/caching_allocator.h"

namespace sd {
namespace {

constexpr int kSlots = static_cast<int>(ScratchSlot::Count);
// The smallest buffer: a tiny request still takes a few KiB, as the old per-kernel buffers.
constexpr size_t kMinBytes = 4096;

struct Buffer {
    float* data = nullptr;
    size_t bytes = 0;
    bool held = false;  // a lease has it (owner thread only)
};

// One thread's buffers. `users` counts the owner's live leases; another thread that frees
// the buffers takes it from 0 to -1 while it does, so that the owner never sees them half
// freed. `release_pending` asks the owner to free them when its last lease ends.
struct ThreadScratch {
    std::atomic<int> users{0};
    std::atomic<bool> release_pending{false};
    Buffer buffers[kSlots];
};

struct Registry {
    std::mutex mutex;
    std::vector<ThreadScratch*> threads;
    std::atomic<size_t> bytes{0};
    std::atomic<size_t> peak{0};
    std::atomic<size_t> buffers{0};
    std::atomic<int> live_runs{0};
};

Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: threads exit during teardown
    return *r;
}

void free_buffer(Buffer& b) {
    if (!b.data) return;
    CachingAllocator::instance().deallocate(b.data, b.bytes);
    Registry& r = registry();
    r.bytes.fetch_sub(b.bytes, std::memory_order_relaxed);
    r.buffers.fetch_sub(1, std::memory_order_relaxed);
    b.data = nullptr;
    b.bytes = 0;
}

// Frees t's buffers unless a lease holds them now; true when it did.
bool try_free(ThreadScratch& t) {
    int idle = 0;
    if (!t.users.compare_exchange_strong(idle, -1)) return false;
    t.release_pending.store(false);
    for (Buffer& b : t.buffers) free_buffer(b);
    t.users.store(0);
    return true;
}

void request_release(ThreadScratch& t) {
    // Pending first: if the owner's lease is live, its end sees the flag (both seq_cst).
    t.release_pending.store(true);
    try_free(t);
}

thread_local ThreadScratch* t_scratch = nullptr;

// Unregisters and frees the thread's buffers when it exits.
struct ThreadExit {
    ~ThreadExit() {
        if (!t_scratch) return;
        Registry& r = registry();
        {
            std::lock_guard<std::mutex> lock(r.mutex);
            r.threads.erase(std::find(r.threads.begin(), r.threads.end(), t_scratch));
        }
        while (!try_free(*t_scratch)) {
        }
        delete t_scratch;
        t_scratch = nullptr;
    }
};

ThreadScratch& this_thread() {
    if (t_scratch) [[likely]]
        return *t_scratch;
    thread_local ThreadExit exit_hook;
    (void)exit_hook;
    auto* t = new ThreadScratch();
    Registry& r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        r.threads.push_back(t);
    }
    t_scratch = t;
    return *t;
}

void enter(ThreadScratch& t) {
    int users = t.users.load(std::memory_order_relaxed);
    for (;;) {
        if (users < 0) {  // another thread is freeing the buffers: a few microseconds
            users = t.users.load(std::memory_order_relaxed);
            continue;
        }
        if (t.users.compare_exchange_weak(users, users + 1)) return;
    }
}

void leave(ThreadScratch& t) {
    if (t.users.fetch_sub(1) == 1 && t.release_pending.load()) try_free(t);
}

void grow(Buffer& b, size_t bytes, bool zero) {
    free_buffer(b);
    bytes = CachingAllocator::size_class(std::max(bytes, kMinBytes));  // scratch_buffer_bytes
    b.data = static_cast<float*>(CachingAllocator::instance().allocate(bytes));
    b.bytes = bytes;
    if (zero) std::memset(b.data, 0, bytes);
    Registry& r = registry();
    const size_t now = r.bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    r.buffers.fetch_add(1, std::memory_order_relaxed);
    size_t peak = r.peak.load(std::memory_order_relaxed);
    while (now > peak && !r.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

}  // namespace

const char* scratch_slot_name(ScratchSlot slot) {
    switch (slot) {
        case ScratchSlot::GemmBlock:
            return "gemm block";
        case ScratchSlot::GemmDequant:
            return "gemm dequant";
        case ScratchSlot::GemmConvert:
            return "gemm convert";
        case ScratchSlot::ConvBand:
            return "conv band";
        case ScratchSlot::WinogradRows:
            return "winograd rows";
        case ScratchSlot::WinogradWeight:
            return "winograd weight";
        case ScratchSlot::WinogradShared:
            return "winograd shared";
        default:
            return "unknown";
    }
}

ScratchLease::ScratchLease(ScratchSlot slot, size_t floats, bool zero_grown)
    : slot_(static_cast<int>(slot)) {
    if (floats == 0) return;
    SD_CHECK(slot_ >= 0 && slot_ < kSlots, "kernel scratch slot %d does not exist", slot_);
    ThreadScratch& t = this_thread();
    Buffer& b = t.buffers[slot_];
    SD_CHECK(!b.held, "kernel scratch: the %s buffer is already in use on this thread",
             scratch_slot_name(slot));
    enter(t);
    const size_t bytes = floats * sizeof(float);
    if (bytes > b.bytes) {
        try {
            grow(b, bytes, zero_grown);
        } catch (...) {
            leave(t);
            throw;
        }
    }
    b.held = true;
    thread_ = &t;
    data_ = b.data;
}

ScratchLease::~ScratchLease() {
    if (!thread_) return;
    auto& t = *static_cast<ThreadScratch*>(thread_);
    t.buffers[slot_].held = false;
    leave(t);
}

KernelScratchStats kernel_scratch_stats() {
    Registry& r = registry();
    KernelScratchStats s;
    s.bytes = r.bytes.load(std::memory_order_relaxed);
    s.peak_bytes = r.peak.load(std::memory_order_relaxed);
    s.buffers = r.buffers.load(std::memory_order_relaxed);
    return s;
}

void release_thread_scratch() {
    if (t_scratch) request_release(*t_scratch);
}

void release_kernel_scratch() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (ThreadScratch* t : r.threads) request_release(*t);
}

int live_runs() {
    return registry().live_runs.load();
}

ScratchRun::ScratchRun() {
    registry().live_runs.fetch_add(1);
}

ScratchRun::~ScratchRun() {
    release_thread_scratch();
    if (registry().live_runs.fetch_sub(1) == 1) release_kernel_scratch();
}

size_t scratch_buffer_bytes(size_t floats) {
    return CachingAllocator::size_class(std::max(floats * sizeof(float), kMinBytes));
}

ScratchBound& ScratchBound::max_with(const ScratchBound& o) {
    per_thread = std::max(per_thread, o.per_thread);
    per_call = std::max(per_call, o.per_call);
    return *this;
}

}  // namespace sd
