// Rotary position embeddings over positions with several axes (FLUX's 3-axis RoPE: axis 0 an
// image index, 1 the row, 2 the column), as the reference's Rope::embed_nd: each axis a of
// width axes_dim[a] contributes axes_dim[a] / 2 pairs with angle pos[a] * theta^(-2j /
// axes_dim[a]), the axes' pairs one after another. The table feeds AttentionOptions::rope.
#pragma once

#include <cstdint>
#include <utility>
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

// Appends the positions (index, row + dy, col + dx) of a rows x cols patch grid, row-major
// (the reference's gen_flux_img_ids with its offsets).
void append_grid_positions(std::vector<float>& ids, int64_t rows, int64_t cols, float index,
                           int64_t dy, int64_t dx);

// Appends the positions of reference images' patches (refs_hw: each latent's height and width,
// patched by `patch`), as the reference's gen_refs_ids: Fixed puts all at index 1, each beside
// the ones before it along the side that keeps the layout squarer (offsets in latent pixels);
// Increase numbers them first_index, + 1, ..., Decrease first_index - 1, - 2, ... (FLUX's start
// at 1, Qwen-Image's Decrease at 0), each at the origin, or with its grid centred on it when
// `centred` (Qwen-Image's scale_rope; never in Fixed mode).
void append_reference_positions(std::vector<float>& ids,
                                const std::vector<std::pair<int64_t, int64_t>>& refs_hw,
                                int64_t patch, RefIndexMode mode, bool centred,
                                int64_t first_index = 1);

}  // namespace sd
