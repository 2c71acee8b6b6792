// The per-run state of one generation (or upscale, or conversion), installed on the thread
// that runs it and torn down after it, so that two contexts in one process run as each was
// asked and an idle process holds no run's memory:
//
//   - compute type  (ops/compute_type.h ScopedComputeType): the calling thread's; kernels are
//                   chosen on the thread that calls the op, so the pool's workers follow it;
//   - threads       (base/thread_pool.h ScopedThreadCount): the ops this thread starts use
//                   this many of the pool's threads; the pool only grows, never rebuilt;
//   - cache budget  (tensor/caching_allocator.h CacheBudget): this run's share of the
//                   allocator's cache (the limit is the sum of the live runs' shares), set
//                   per phase with cache().set(); trim() on this thread keeps the others';
//   - kernel scratch (ops/kernel_scratch.h ScratchRun): the kernels' per-thread buffers,
//                   kept across ops while the run lives; at its end this thread's go, and the
//                   last live run takes every thread's with it;
//   - cancel token  (base/cancel.h CancelScope).
//
// When it ends, after the scratch went back, the allocator's cache is trimmed of what the
// remaining runs' budgets do not cover (all of it when this was the last run).
//
// Nested scopes (an upscale inside a generation's hires pass) are fine: the inner one
// overrides what it sets and restores the outer one's state at its end.
#pragma once

#include <cstddef>
#include <optional>

#include "base/cancel.h"
#include "base/thread_pool.h"
#include "ops/compute_type.h"
#include "ops/kernel_scratch.h"
#include "tensor/caching_allocator.h"

namespace sd {

struct MemoryPolicy;

struct RunOptions {
    std::optional<ComputeType> compute;      // none: the thread's current one stays
    int threads = 0;                         // <= 0: the thread's current count stays
    size_t cache_bytes = size_t{512} << 20;  // the first phase's budget
    const CancelToken* cancel = nullptr;     // null: the thread's current one stays
};

// A context's policy (its compute type and thread count) with a budget and a token.
RunOptions run_options(const MemoryPolicy& policy, size_t cache_bytes, const CancelToken* cancel);

class RunScope {
  public:
    explicit RunScope(const RunOptions& options);
    ~RunScope() = default;
    RunScope(const RunScope&) = delete;
    RunScope& operator=(const RunScope&) = delete;

    // The run's budget; set() it per phase.
    CacheBudget& cache() { return cache_; }

  private:
    // Destroyed last: trims once the budget and the scratch are gone.
    struct TrimAtEnd {
        ~TrimAtEnd();
    } trim_at_end_;
    ScopedThreadCount threads_;
    ScopedComputeType compute_;
    CacheBudget cache_;
    CancelScope cancel_;
    ScratchRun scratch_;  // destroyed first: its buffers go back while the budget lives
};

}  // namespace sd
