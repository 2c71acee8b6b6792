// One persistent pool of worker threads that every op splits its work across.
//
// run(fn) calls fn(index, count) once for each index in [0, count) (count: the pool's size)
// and returns when all are done; the threads claim the indices as they come, so a thread the
// OS has descheduled (more threads than CPUs, a loaded machine) leaves its share to the
// others instead of stalling the run. parallel_for splits an index range over the threads.
// A call made from inside a pool task runs inline on the calling thread, so nested
// parallelism never deadlocks. An exception thrown by a task is rethrown to the caller.
// Cancellation (base/cancel.h): run() checks the calling thread's current token before it
// starts, and parallel_for stops handing out chunks once it is cancelled, then throws.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "base/cancel.h"

namespace sd {

class ThreadPool {
  public:
    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return num_threads_; }

    template <class F>
    void run(F&& fn) {
        auto invoke = [](void* ctx, int index, int count) {
            (*static_cast<F*>(ctx))(index, count);
        };
        run_raw(invoke, &fn);
    }

  private:
    using Invoke = void (*)(void* ctx, int index, int count);
    void run_raw(Invoke invoke, void* ctx);
    void worker_loop();
    void run_task(int index);
    void run_claimed();  // runs indices of the current run until none is left

    int num_threads_;
    std::vector<std::thread> workers_;
    std::mutex run_mutex_;  // one run at a time from outside the pool

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};  // indices of the current run not finished yet
    std::atomic<int> next_{0};     // the next index to claim
    int spin_rounds_ = 0;          // 0 when oversubscribed: a spinning thread steals a CPU
    bool stop_ = false;

    Invoke invoke_ = nullptr;
    void* ctx_ = nullptr;
    std::exception_ptr error_;
    std::mutex error_mutex_;
};

// The process-wide pool. Its size defaults to the number of physical cores.
ThreadPool& thread_pool();
// Rebuilds the pool with n threads (n <= 0: physical cores). Not to be called while ops run.
void set_num_threads(int n);
int num_threads();
// The CPUs this process may run on (its affinity mask).
int usable_cpus();
// A user's thread count made one that helps: more threads than usable CPUs only contend
// (2 cores: -t 4 ran 1.8x and -t 16 5x slower than -t 2), so those are clamped with a
// warning naming both numbers; an absurd count (over 4096) is an error. n <= 0 stays "the
// default" (physical cores).
int threads_that_help(int n);
// True on a thread that is currently running a pool task.
bool in_parallel_region();

// Calls fn(begin, end) over [0, n) in contiguous chunks, at least `grain` indices each,
// handed out dynamically so uneven work balances.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
    if (n <= 0) return;
    grain = std::max<int64_t>(grain, 1);
    ThreadPool& pool = thread_pool();
    if (n <= grain || in_parallel_region()) {
        fn(int64_t{0}, n);
        return;
    }
    // Aim for a few chunks per thread, never fewer than `grain` indices a chunk.
    int64_t chunk = std::max(grain, n / (int64_t{pool.size()} * 4));
    const CancelToken* cancel = current_cancel_token();
    if (pool.size() == 1) {  // in chunks all the same, so that a cancel stops it part-way
        for (int64_t begin = 0; begin < n; begin += chunk) {
            if (cancel) cancel->check();
            fn(begin, std::min(n, begin + chunk));
        }
        return;
    }
    std::atomic<int64_t> next{0};
    pool.run([&](int, int) {
        for (;;) {
            if (cancel && cancel->cancelled()) break;
            int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
            if (begin >= n) break;
            fn(begin, std::min(n, begin + chunk));
        }
    });
    if (cancel) cancel->check();  // the chunks left undone make the result meaningless
}

// Calls fn(begin, end) once per thread over an even static split of [0, n).
template <class F>
void parallel_for_static(int64_t n, F&& fn) {
    if (n <= 0) return;
    ThreadPool& pool = thread_pool();
    if (pool.size() == 1 || n == 1 || in_parallel_region()) {
        fn(int64_t{0}, n);
        return;
    }
    pool.run([&](int index, int count) {
        int64_t begin = n * index / count;
        int64_t end = n * (index + 1) / count;
        if (begin < end) fn(begin, end);
    });
}

}  // namespace sd
