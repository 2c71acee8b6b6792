#include "base/thread_pool.h"

#include <sched.h>

#include "base/cpu_features.h"
#include "base/error.h"
#include "base/log.h"

namespace sd {
namespace {

thread_local bool t_in_task = false;
// The calling thread's count (ScopedThreadCount), or inside a task its run's; 0: none.
thread_local int t_threads = 0;
// set_num_threads's; 0: physical cores.
std::atomic<int> g_default_threads{0};

// Spin this many rounds for the next task before sleeping: ops come back to back during a
// forward pass, and waking a sleeping thread costs tens of microseconds.
constexpr int kSpinRounds = 20000;

constexpr uint64_t kIndexMask = 0xffffffffu;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

int default_threads() {
    const int n = g_default_threads.load(std::memory_order_relaxed);
    return n > 0 ? n : cpu_features().physical_cores;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : usable_cpus_(usable_cpus()) {
    std::lock_guard<std::mutex> lock(run_mutex_);
    start_workers(std::max(1, num_threads));
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

void ThreadPool::start_workers(int n) {
    const uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int id = size(); id < n; ++id) {
        workers_.emplace_back([this, id, gen] { worker_loop(id, gen); });
    }
    if (n > size()) size_.store(n, std::memory_order_release);
}

void ThreadPool::reserve(int n) {
    if (n <= size()) return;
    SD_CHECK(!t_in_task, "the thread pool cannot grow to %d threads from inside one of its tasks",
             n);
    std::lock_guard<std::mutex> lock(run_mutex_);
    start_workers(n);
}

void ThreadPool::run_task(int index, int count) {
    t_in_task = true;
    const int saved_threads = t_threads;
    t_threads = count;
    try {
        invoke_(ctx_, index, count);
    } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
    }
    t_threads = saved_threads;
    t_in_task = false;
}

void ThreadPool::run_claimed() {
    for (;;) {
        const uint64_t claim = claim_.fetch_add(1, std::memory_order_acq_rel);
        const int index = static_cast<int>(claim & kIndexMask);
        const int count = static_cast<int>(claim >> 32);
        if (index >= count) return;
        run_task(index, count);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(mutex_);
            done_.notify_one();
        }
    }
}

void ThreadPool::run_raw(int count, Invoke invoke, void* ctx) {
    if (!t_in_task) cancellation_point();  // every op from outside the pool starts here
    count = std::clamp(count, 1, size());
    if (count == 1 || t_in_task) {
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
    // With more threads than CPUs a spinning thread takes the CPU from one with work.
    const int spin_rounds = count > usable_cpus_ ? 0 : kSpinRounds;
    spin_rounds_.store(spin_rounds, std::memory_order_relaxed);
    pending_.store(count, std::memory_order_relaxed);
    // Publishes invoke_, ctx_ and pending_ with the count and index 0.
    claim_.store(static_cast<uint64_t>(count) << 32, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();

    run_claimed();

    for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
        if (spin < spin_rounds) {
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

void ThreadPool::worker_loop(int id, uint64_t seen) {
    int last_count = 0;  // the last run's: a worker it did not use sleeps instead of spinning
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        const int spin_rounds = id < last_count ? spin_rounds_.load(std::memory_order_relaxed) : 0;
        for (int spin = 0; gen == seen && spin < spin_rounds; ++spin) {
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
        last_count = static_cast<int>(claim_.load(std::memory_order_acquire) >> 32);
        if (id < last_count) run_claimed();
    }
}

ThreadPool& thread_pool() {
    static ThreadPool pool(default_threads());
    return pool;
}

void set_num_threads(int n) {
    if (n <= 0) n = cpu_features().physical_cores;
    thread_pool().reserve(n);
    g_default_threads.store(n, std::memory_order_relaxed);
}

int num_threads() {
    return t_threads > 0 ? t_threads : default_threads();
}

ScopedThreadCount::ScopedThreadCount(int n) : previous_(t_threads) {
    if (n <= 0) return;
    thread_pool().reserve(n);
    t_threads = n;
}

ScopedThreadCount::~ScopedThreadCount() {
    t_threads = previous_;
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

bool in_parallel_region() {
    return t_in_task;
}

}  // namespace sd
