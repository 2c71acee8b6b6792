// Rotary position embeddings over positions with several axes (FLUX's 3-axis RoPE: axis 0 an
// image index, 1 the row, 2 the column), as the reference's Rope::embed_nd: each axis a of
// width axes_dim[a] contributes axes_dim[a] / 2 pairs with angle pos[a] * theta^(-2j /
// axes_dim[a]), the axes' pairs one after another. The table feeds AttentionOptions::rope.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace sd {

// How reference images' tokens are numbered on the index axis (the reference's
// Rope::RefIndexMode): Fixed gives every reference the first reference index and places them
// side by side, Increase numbers them first, first + 1, ..., Decrease first - 1, first - 2, ...
enum class RefIndexMode { Fixed, Increase, Decrease };

// positions: L rows of axes_dim.size() values (row-major). Returns f32 [L, sum(axes_dim) / 2,
// 2] holding (cos, sin) of each angle, computed in the reference's float steps.
Tensor rope_table(const std::vector<float>& positions, const std::vector<int>& axes_dim,
                  float theta);

}  // namespace sd
