#include "base/thread_pool.h"

#include <sched.h>

#include <memory>

#include "base/cpu_features.h"
#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

thread_local bool t_in_task = false;

// Spin this many rounds for the next task before sleeping: ops come back to back during a
// forward pass, and waking a sleeping thread costs tens of microseconds.
constexpr int kSpinRounds = 20000;

std::unique_ptr<ThreadPool>& pool_slot() {
    static std::unique_ptr<ThreadPool> pool;
    return pool;
}
std::mutex g_pool_mutex;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
    // With more threads than CPUs a spinning thread takes the CPU from one with work.
    spin_rounds_ = num_threads_ > usable_cpus() ? 0 : kSpinRounds;
    next_.store(num_threads_);
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_task(int index) {
    t_in_task = true;
    try {
        invoke_(ctx_, index, num_threads_);
    } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
    }
    t_in_task = false;
}

void ThreadPool::run_claimed() {
    for (int i; (i = next_.fetch_add(1, std::memory_order_acq_rel)) < num_threads_;) {
        run_task(i);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);
            done_.notify_one();
        }
    }
}

void ThreadPool::run_raw(Invoke invoke, void* ctx) {
    if (!t_in_task) cancellation_point();  // every op from outside the pool starts here
    if (num_threads_ == 1 || t_in_task) {
        bool was = t_in_task;
        t_in_task = true;
        struct Restore {
            bool v;
            ~Restore() { t_in_task = v; }
        } restore{was};
        invoke(ctx, 0, 1);
        return;
    }
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    invoke_ = invoke;
    ctx_ = ctx;
    error_ = nullptr;
    pending_.store(num_threads_, std::memory_order_relaxed);
    next_.store(0, std::memory_order_release);  // publishes invoke_, ctx_ and pending_
    {
        std::lock_guard<std::mutex> lock(mutex_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();

    run_claimed();

    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
        if (spin < spin_rounds_) {
            cpu_relax();
        } else {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
        }
    }
    if (error_) {
        std::exception_ptr e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
    }
}

void ThreadPool::worker_loop() {
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        for (int spin = 0; gen == seen && spin < spin_rounds_; ++spin) {
            cpu_relax();
            gen = generation_.load(std::memory_order_acquire);
        }
        if (gen == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (stop_) return;
        }
        run_claimed();
    }
}

ThreadPool& thread_pool() {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    auto& pool = pool_slot();
    if (!pool) pool = std::make_unique<ThreadPool>(cpu_features().physical_cores);
    return *pool;
}

void set_num_threads(int n) {
    if (n <= 0) n = cpu_features().physical_cores;
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    auto& pool = pool_slot();
    if (pool && pool->size() == n) return;
    pool.reset();
    pool = std::make_unique<ThreadPool>(n);
}

int usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpu_features().logical_cpus;
    return std::max(1, CPU_COUNT(&set));
}

int threads_that_help(int n) {
    // Far beyond any machine: a typo, refused before anything starts.
    constexpr int kMaxThreads = 4096;
    SD_CHECK(n <= kMaxThreads, "%d threads: at most %d (this process can use %d CPUs)", n,
             kMaxThreads, usable_cpus());
    const int cpus = usable_cpus();
    if (n > cpus) {
        SD_LOG_WARN("%d threads asked for, but this process can use %d CPUs: using %d", n, cpus,
                    cpus);
        return cpus;
    }
    return n;
}

int num_threads() {
    return thread_pool().size();
}

bool in_parallel_region() {
    return t_in_task;
}

}  // namespace sd
