#include "models/chroma_approximator.h"

#include <algorithm>

#include "base/error.h"
#include "base/log.h"
#include "nn/weight_patch.h"

namespace sd {
namespace {

constexpr float kNormEps = 1e-6f;
constexpr float kTimeFactor = 1000.0f;
constexpr int64_t kTimeEmbedding = 16;   // of the timestep, and of the guidance
constexpr int64_t kIndexEmbedding = 32;  // of the row's index
constexpr int64_t kInput = 2 * kTimeEmbedding + kIndexEmbedding;

}  // namespace

std::vector<int64_t> chroma_rows_used(int double_blocks, int single_blocks) {
    std::vector<int64_t> rows;
    auto add = [&](int64_t first, int64_t count) {
        for (int64_t r = first; r < first + count; ++r) rows.push_back(r);
    };
    for (int i = 0; i < single_blocks; ++i) add(chroma_single_row(i), 3);
    for (int i = 0; i < double_blocks; ++i) add(chroma_double_img_row(i), 6);
    for (int i = 0; i < double_blocks; ++i) add(chroma_double_txt_row(i), 6);
    add(chroma_final_row(), 2);
    return rows;
}

Tensor chroma_approximator_input(float timestep, float guidance) {
    const int64_t n = kChromaModulations;
    const Tensor t = timestep_embedding(Tensor::full({1}, timestep * kTimeFactor), kTimeEmbedding);
    const Tensor g = timestep_embedding(Tensor::full({1}, guidance * kTimeFactor), kTimeEmbedding);
    std::vector<float> index(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = static_cast<float>(i);
    const Tensor rows = timestep_embedding(Tensor::from_vector({n}, index) * kTimeFactor,
                                           kIndexEmbedding);  // [n, 32]
    const Tensor tg = concat({t, g}, 1);                      // [1, 32], the same in every row
    return concat({tg.expand({n, 2 * kTimeEmbedding}), rows}, 1);
}

ChromaApproximator ChromaApproximator::load(const Weights& w, int64_t hidden) {
    auto shape = w.shape_of("in_proj.weight");
    SD_CHECK(shape && shape->size() == 2,
             "Chroma under '%s': in_proj.weight is missing or not 2-D (distilled guidance layer)",
             w.prefix().c_str());
    SD_CHECK((*shape)[1] == kInput,
             "Chroma under '%s': in_proj.weight takes %lld values; the distilled guidance layer's "
             "input is %lld (timestep, guidance and index embeddings)",
             w.prefix().c_str(), (long long)(*shape)[1], (long long)kInput);
    const int64_t inner = (*shape)[0];
    ChromaApproximator a;
    a.in_proj = Linear::load(w["in_proj"], kInput, inner);
    for (int i = 0; w.has("layers." + std::to_string(i) + ".in_layer.weight"); ++i) {
        a.norms.push_back(w["norms"][i].get("scale", {inner}));
        a.layers.push_back({Linear::load(w["layers"][i]["in_layer"], inner, inner),
                            Linear::load(w["layers"][i]["out_layer"], inner, inner)});
    }
    a.out_proj = Linear::load(w["out_proj"], inner, hidden);
    return a;
}

Tensor ChromaApproximator::forward(const Tensor& x) const {
    Tensor h = in_proj.forward(x);
    for (size_t i = 0; i < layers.size(); ++i)
        h = h + layers[i].forward(rms_norm(h, norms[i], kNormEps));
    return out_proj.forward(h);
}

Tensor ChromaModulationTable::get(const ChromaApproximator& approximator, float timestep,
                                  float guidance) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t epoch = weight_patches_epoch();
    if (!table_.defined() || timestep_ != timestep || guidance_ != guidance || epoch_ != epoch) {
        table_ = Tensor();  // its memory back before the next one is made
        Tensor ids = Tensor::empty({static_cast<int64_t>(rows_.size())}, DType::I32);
        for (size_t i = 0; i < rows_.size(); ++i)
            ids.data<int32_t>()[i] = static_cast<int32_t>(rows_[i]);
        const Tensor out =
            approximator.forward(embedding(chroma_approximator_input(timestep, guidance), ids))
                .contiguous();
        const int64_t hidden = out.size(1);
        Tensor table = Tensor::zeros({kChromaModulations, hidden});
        for (size_t i = 0; i < rows_.size(); ++i) {
            std::copy_n(out.data<float>() + static_cast<int64_t>(i) * hidden, hidden,
                        table.data<float>() + rows_[i] * hidden);
        }
        table_ = table;
        timestep_ = timestep;
        guidance_ = guidance;
        epoch_ = epoch;
    }
    return table_;
}

Tensor chroma_rows(const Tensor& table, int64_t first, int64_t count) {
    const int64_t hidden = table.size(1);
    return table.narrow(0, first, count).view({1, count * hidden});
}

}  // namespace sd
