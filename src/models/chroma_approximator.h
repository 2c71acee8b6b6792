// Chroma's distilled guidance layer (`distilled_guidance_layer.*`, stable-diffusion.cpp's
// ChromaApproximator): in place of FLUX's time_in / guidance_in / vector_in and every block's
// modulation linear, one MLP maps (timestep, guidance, modulation index) embeddings to the
// whole table of modulation vectors of a step:
//   in_proj -> 5 x (x + layers.N(norms.N(x)))  (RMS norm, then in_layer -> SiLU -> out_layer)
//   -> out_proj.
// Its rows are read by block: the single blocks' (shift, scale, gate) first, then the double
// blocks' image and text (shift, scale, gate) x 2, then the final layer's (shift, scale), at
// the places of the full 19 + 38 block model whatever the depth (the reference's layout).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "nn/dit_blocks.h"
#include "nn/layers.h"

namespace sd {

// The full model's depths, which fix where each block's rows sit in the table.
constexpr int kChromaDoubleBlocks = 19;
constexpr int kChromaSingleBlocks = 38;
constexpr int64_t kChromaModulations = 3 * kChromaSingleBlocks + 2 * 6 * kChromaDoubleBlocks + 2;

// The first row of each block's modulation vectors in the table.
inline int64_t chroma_single_row(int i) {
    return 3 * i;
}
inline int64_t chroma_double_img_row(int i) {
    return 3 * kChromaSingleBlocks + 6 * i;
}
inline int64_t chroma_double_txt_row(int i) {
    return 3 * kChromaSingleBlocks + 6 * kChromaDoubleBlocks + 6 * i;
}
inline int64_t chroma_final_row() {
    return kChromaModulations - 2;
}

// The rows a model of `double_blocks` + `single_blocks` reads, in order: all of them for the
// full model, a few for a shallow one.
std::vector<int64_t> chroma_rows_used(int double_blocks, int single_blocks);

// The approximator's input rows [kChromaModulations, 64]: each row is the timestep's
// embedding (16 values: t scaled by 1000 as FLUX's time_in), the guidance's (16), then the
// row's index's (32, the index scaled by 1000 too), as the reference builds them.
Tensor chroma_approximator_input(float timestep, float guidance);

struct ChromaApproximator {
    Linear in_proj, out_proj;
    std::vector<Tensor> norms;  // RMS norm scales
    std::vector<MlpEmbedder> layers;

    // w = "...distilled_guidance_layer."; the inner width and depth are read from the weights.
    static ChromaApproximator load(const Weights& w, int64_t hidden);
    // [N, 64] -> [N, hidden].
    Tensor forward(const Tensor& x) const;
};

// The table of modulation vectors [kChromaModulations, hidden] of a timestep and guidance,
// the last one kept: both sides of guidance share it (the same timestep, guidance 0 on both).
// A new set of weight patches (a generation's LoRAs) makes a new one.
// Only `rows` are computed (each row is its own: the approximator mixes no rows); the others
// are 0.
class ChromaModulationTable {
  public:
    explicit ChromaModulationTable(std::vector<int64_t> rows) : rows_(std::move(rows)) {}
    Tensor get(const ChromaApproximator& approximator, float timestep, float guidance) const;

  private:
    std::vector<int64_t> rows_;
    mutable std::mutex mutex_;
    mutable float timestep_ = 0.0f, guidance_ = 0.0f;
    mutable uint64_t epoch_ = 0;  // weight_patches_epoch()
    mutable Tensor table_;
};

// Rows [first, first + count) of the table as one [1, count * hidden] modulation vector, whose
// chunks modulated_norm / gated read.
Tensor chroma_rows(const Tensor& table, int64_t first, int64_t count);

}  // namespace sd
