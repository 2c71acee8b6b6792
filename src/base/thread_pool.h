// One persistent pool of worker threads that every op splits its work across.
//
// run(count, fn) calls fn(index, count) once for each index in [0, count) and returns when
// all are done; the calling thread and count - 1 of the pool's threads claim the indices as
// they come, so a thread the OS has descheduled (more threads than CPUs, a loaded machine)
// leaves its share to the others instead of stalling the run. parallel_for splits an index
// range over the threads. A call made from inside a pool task runs inline on the calling
// thread, so nested parallelism never deadlocks. An exception thrown by a task is rethrown to
// the caller. Cancellation (base/cancel.h): run() checks the calling thread's current token
// before it starts, and parallel_for stops handing out chunks once it is cancelled, then
// throws.
//
// Thread counts are per run, not per process. The process pool only grows (to the largest
// count asked for); what a call uses is num_threads(): the calling thread's ScopedThreadCount
// while one is live (a generation of a context made with -t N), else the process default
// (set_num_threads, physical cores at first). So a context created, or a count changed, while
// another context's generation runs ops never rebuilds the pool under it. Runs from several
// outside threads take turns (one op at a time on the pool); a worker that the current run
// does not use sleeps instead of spinning.
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
    // num_threads: the threads a run may use, the calling thread included (num_threads - 1
    // workers are started).
    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // The most threads a run can use (workers + the caller).
    int size() const { return size_.load(std::memory_order_acquire); }
    // Starts workers until size() >= n. Waits for a run in progress to end; not to be called
    // from a pool task (fails: it would wait for itself).
    void reserve(int n);

    // fn(index, count) for each index < count (clamped to [1, size()]).
    template <class F>
    void run(int count, F&& fn) {
        auto invoke = [](void* ctx, int index, int n) { (*static_cast<F*>(ctx))(index, n); };
        run_raw(count, invoke, &fn);
    }
    // All of size()'s threads.
    template <class F>
    void run(F&& fn) {
        run(size(), std::forward<F>(fn));
    }

  private:
    using Invoke = void (*)(void* ctx, int index, int count);
    void run_raw(int count, Invoke invoke, void* ctx);
    void start_workers(int n);  // run_mutex_ held
    void worker_loop(int id, uint64_t seen);
    void run_task(int index, int count);
    void run_claimed();  // runs indices of the current run until none is left

    std::atomic<int> size_{1};
    std::vector<std::thread> workers_;  // run_mutex_
    std::mutex run_mutex_;              // one run at a time from outside the pool

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};  // indices of the current run not finished yet
    // The current run's count (high 32 bits) and its next index to claim (low 32 bits), in
    // one word so that a late worker of the previous run never pairs an old index with a new
    // count.
    std::atomic<uint64_t> claim_{0};
    std::atomic<int> spin_rounds_{0};  // 0 when oversubscribed: a spinning thread steals a CPU
    int usable_cpus_ = 1;
    bool stop_ = false;

    Invoke invoke_ = nullptr;
    void* ctx_ = nullptr;
    std::exception_ptr error_;
    std::mutex error_mutex_;
};

// The process-wide pool (grown, never shrunk; see the top of this file).
ThreadPool& thread_pool();
// Sets the process default count (n <= 0: physical cores) and grows the pool to it. Safe
// while other threads run ops: nothing is rebuilt.
void set_num_threads(int n);
// The threads an op started on this thread uses: its ScopedThreadCount's, else the default.
// Inside a pool task: the count of the run the task belongs to.
int num_threads();
// The calling thread uses n threads while it lives (n <= 0: no change); the pool grows to n.
class ScopedThreadCount {
  public:
    explicit ScopedThreadCount(int n);
    ~ScopedThreadCount();
    ScopedThreadCount(const ScopedThreadCount&) = delete;
    ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

  private:
    int previous_;
};
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
    if (n <= grain || in_parallel_region()) {
        fn(int64_t{0}, n);
        return;
    }
    const int threads = num_threads();
    // Aim for a few chunks per thread, never fewer than `grain` indices a chunk.
    int64_t chunk = std::max(grain, n / (int64_t{threads} * 4));
    const CancelToken* cancel = current_cancel_token();
    if (threads == 1) {  // in chunks all the same, so that a cancel stops it part-way
        for (int64_t begin = 0; begin < n; begin += chunk) {
            if (cancel) cancel->check();
            fn(begin, std::min(n, begin + chunk));
        }
        return;
    }
    std::atomic<int64_t> next{0};
    thread_pool().run(threads, [&](int, int) {
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
    const int threads = num_threads();
    if (threads == 1 || n == 1 || in_parallel_region()) {
        fn(int64_t{0}, n);
        return;
    }
    thread_pool().run(threads, [&](int index, int count) {
        int64_t begin = n * index / count;
        int64_t end = n * (index + 1) / count;
        if (begin < end) fn(begin, end);
    });
}

}  // namespace sd
