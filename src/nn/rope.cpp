#include "nn/rope.h"

#include <cmath>

#include "base/error.h"

namespace sd {

Tensor rope_table(const std::vector<float>& positions, const std::vector<int>& axes_dim,
                  float theta) {
    const size_t axes = axes_dim.size();
    SD_CHECK(axes > 0 && positions.size() % axes == 0,
             "rope_table: %zu position values for %zu axes", positions.size(), axes);
    int pairs = 0;
    std::vector<float> omega;  // every axis' frequencies, one after another
    for (int dim : axes_dim) {
        SD_CHECK(dim > 0 && dim % 2 == 0, "rope_table: axis width %d must be even", dim);
        const int half = dim / 2;
        // linspace(0, (dim - 2) / dim, half) in float, then 1 / theta^scale in double.
        const float end = (static_cast<float>(dim) - 2.0f) / static_cast<float>(dim);
        const float step = half > 1 ? end / static_cast<float>(half - 1) : 0.0f;
        for (int j = 0; j < half; ++j) {
            const float s = static_cast<float>(j) * step;
            omega.push_back(static_cast<float>(1.0 / std::pow(static_cast<double>(theta), s)));
        }
        pairs += half;
    }
    const int64_t L = static_cast<int64_t>(positions.size() / axes);
    Tensor out = Tensor::empty({L, pairs, 2});
    float* o = out.data<float>();
    for (int64_t i = 0; i < L; ++i) {
        int p = 0;
        for (size_t a = 0; a < axes; ++a) {
            const float pos = positions[static_cast<size_t>(i) * axes + a];
            for (int j = 0; j < axes_dim[a] / 2; ++j, ++p) {
                const float angle = pos * omega[static_cast<size_t>(p)];
                o[(i * pairs + p) * 2] = std::cos(angle);
                o[(i * pairs + p) * 2 + 1] = std::sin(angle);
            }
        }
    }
    return out;
}

}  // namespace sd
