#include "nn/rope.h"

#include <algorithm>
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

void append_grid_positions(std::vector<float>& ids, int64_t rows, int64_t cols, float index,
                           int64_t dy, int64_t dx) {
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
            ids.insert(ids.end(), {index, static_cast<float>(i + dy), static_cast<float>(j + dx)});
        }
    }
}

void append_reference_positions(std::vector<float>& ids,
                                const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                int64_t patch, RefIndexMode mode, bool centred,
                                int64_t first_index) {
    int64_t cur_h = 0, cur_w = 0, index = first_index;
    for (const auto& [rh, rw] : refs_hw) {
        const int64_t rows = (rh + patch / 2) / patch, cols = (rw + patch / 2) / patch;
        int64_t dy = 0, dx = 0;
        if (mode == RefIndexMode::Fixed) {
            if (rh + cur_h > rw + cur_w) {
                dx = cur_w;
            } else {
                dy = cur_h;
            }
        } else if (mode == RefIndexMode::Decrease) {
            --index;
        }
        const bool centre = centred && mode != RefIndexMode::Fixed;
        append_grid_positions(ids, rows, cols, static_cast<float>(index),
                              dy - (centre ? rows / 2 : 0), dx - (centre ? cols / 2 : 0));
        if (mode == RefIndexMode::Increase) ++index;
        cur_h = std::max(cur_h, rh + dy);
        cur_w = std::max(cur_w, rw + dx);
    }
}

}  // namespace sd
