#include "peak_flops.h"

#include <atomic>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/thread_pool.h"

namespace sd::bench {
namespace {

// Scalar FMA chains for builds without x86 kernels; the compiler may vectorise them.
double fma_loop_generic(long iterations) {
    float acc[32];
    for (int i = 0; i < 32; ++i) acc[i] = 0.001f * static_cast<float>(i);
    for (long it = 0; it < iterations; ++it) {
        for (int i = 0; i < 32; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
    }
    float sum = 0;
    for (float v : acc) sum += v;
    volatile float sink = sum;
    (void)sink;
    return static_cast<double>(iterations) * 32 * 2;
}

using Loop = double (*)(long iterations);

Loop fma_loop(Isa isa) {
#ifdef SD_X86_KERNELS
    if (isa == Isa::Avx512) return fma_loop_avx512;
    if (isa == Isa::Avx2) return fma_loop_avx2;
#endif
    return fma_loop_generic;
}

double measure_loop_gflops(Loop run_loop, double seconds) {
    // Calibrate on one thread so each run lasts about `seconds`.
    long iterations = 1 << 16;
    for (;;) {
        double t0 = now_seconds();
        run_loop(iterations);
        double dt = now_seconds() - t0;
        if (dt > 0.05) {
            iterations = static_cast<long>(iterations * seconds / dt) + 1;
            break;
        }
        iterations *= 4;
    }
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
        std::atomic<double> flops{0};
        double t0 = now_seconds();
        thread_pool().run(num_threads(), [&](int, int) {  // runscope: the run's count
            double f = run_loop(iterations);
            double expected = flops.load();
            while (!flops.compare_exchange_weak(expected, expected + f)) {
            }
        });
        double dt = now_seconds() - t0;
        best = std::max(best, flops.load() / dt * 1e-9);
    }
    return best;
}

}  // namespace

double measure_peak_gflops(Isa isa, double seconds) {
    return measure_loop_gflops(fma_loop(isa), seconds);
}

double measure_bf16_peak_gflops(double seconds) {
#ifdef SD_X86_KERNELS
    if (cpu_features().avx512bf16) return measure_loop_gflops(dpbf16_loop_avx512, seconds);
#endif
    (void)seconds;
    return 0.0;
}

}  // namespace sd::bench
