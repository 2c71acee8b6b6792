#include "ops/flop_counter.h"

#include <atomic>

namespace sd {
namespace {

std::atomic<double> g_flops{0.0};

}  // namespace

void count_flops(double flops) {
    double current = g_flops.load(std::memory_order_relaxed);
    while (!g_flops.compare_exchange_weak(current, current + flops, std::memory_order_relaxed)) {
    }
}

double counted_flops() {
    return g_flops.load(std::memory_order_relaxed);
}

void reset_flop_counter() {
    g_flops.store(0.0, std::memory_order_relaxed);
}

}  // namespace sd
