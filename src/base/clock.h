// Monotonic wall clock for timing and progress reports.
#pragma once

#include <chrono>
#include <cstdint>

namespace sd {

// Seconds since an arbitrary fixed point; never goes backwards.
inline double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline int64_t now_microseconds() {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace sd
