// PSNR of two 8-bit images, as the fixtures README defines the parity check: on RGB bytes,
// MSE over every channel value, 20 log10(255 / sqrt(MSE)); identical images give infinity.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace sd::test {

inline double psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    if (a.size() != b.size() || a.empty()) return -1.0;
    double se = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        double d = static_cast<double>(a[i]) - b[i];
        se += d * d;
    }
    if (se == 0) return std::numeric_limits<double>::infinity();
    double mse = se / static_cast<double>(a.size());
    return 20.0 * std::log10(255.0 / std::sqrt(mse));
}

}  // namespace sd::test
