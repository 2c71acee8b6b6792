#include "adapters/lora_apply.h"

#include "adapters/lora_file.h"
#include "adapters/lora_fit.h"
#include "adapters/lora_math.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"

namespace sd {
namespace {

// Merges `delta` into the layer's current weight (its own, or an earlier LoRA's merge).
void merge(LayerPatch& patch, const TensorRecord& target, const Tensor& delta) {
    const Tensor current = patch.weight.defined() ? patch.weight : target.load();
    Tensor sum = convert(current, DType::F32).view(delta.shape()) + delta;
    patch.weight = current.dtype() == DType::F32 ? sum : convert(sum, current.dtype());
}

// The two halves of `t`'s rows exchanged (the same whichever way round).
Tensor swap_row_halves(const Tensor& t) {
    const int64_t half = t.size(0) / 2;
    return concat({t.narrow(0, half, half), t.narrow(0, 0, half)}, 0);
}

// `part` (the rows of target's part, in the module's order) placed in a tensor of the
// weight's rows, zeros elsewhere.
Tensor in_weight_rows(const Tensor& part, const LoraTarget& target) {
    if (target.swap_halves) return swap_row_halves(part);
    if (target.whole()) return part;
    const int64_t rows = target.weight->shape[0], n = part.size(0);
    std::vector<Tensor> pieces;
    auto zeros = [&](int64_t k) {
        Shape shape = part.shape();
        shape[0] = k;
        pieces.push_back(Tensor::zeros(shape));
    };
    if (target.first_row > 0) zeros(target.first_row);
    pieces.push_back(part.contiguous());
    if (target.first_row + n < rows) zeros(rows - target.first_row - n);
    return concat(pieces, 0);
}

void add_module(const LoraModule& m, const LoraTarget& part, float multiplier, LoraMode mode,
                LayerPatch& patch) {
    const TensorRecord& target = *part.weight;
    const bool plain = m.kind() == LoraKind::LowRank && !m.has("dora_scale");
    if (!part.whole() && m.has("dora_scale"))
        fail("'%s' is DoRA on a part of the fused weight %s: not supported", m.key.c_str(),
             target.name.c_str());
    if (plain && !m.has("mid") && target.shape.size() >= 2) {
        LowRankTerm term = lora_term(m, part.shape, multiplier);
        term.up = in_weight_rows(term.up, part);  // a part's rows of the output, zeros elsewhere
        if (mode == LoraMode::AtRuntime) {
            term.up = term.up * term.scale;  // one pass less over the output in each forward
            term.scale = 1.0f;
            patch.terms.push_back(std::move(term));
            return;
        }
        const Tensor current = patch.weight.defined() ? patch.weight : target.load();
        if (current.numel() / current.size(0) % block_size(current.dtype()) == 0) {
            patch.weight = merge_low_rank(current, term);
            return;
        }
    }
    if (mode == LoraMode::AtRuntime && plain && target.shape.size() >= 2) {
        LowRankTerm term = lora_term(m, part.shape, multiplier);
        term.up = in_weight_rows(term.up, part);
        patch.terms.push_back(std::move(term));
        return;
    }
    Tensor base = m.has("dora_scale") ? target.load() : Tensor{};
    if (base.defined() && part.swap_halves) base = swap_row_halves(base);  // the module's order
    Tensor delta = in_weight_rows(lora_delta(m, part.shape, multiplier, base), part);
    if (mode == LoraMode::Immediately)
        merge(patch, target, delta);
    else
        patch.deltas.push_back(delta);
}

void report(const LoraRequest& lora, const LoraStats& s, const std::string& model_name,
            LoraMode mode) {
    // Applying it would change nothing: a LoRA for another family, an error (not a silent
    // no-op), so the caller's generation stops naming it.
    if (s.applied == 0)
        fail(
            "LoRA '%s' matched none of the %s model's weights (%zu tensors, %zu of them named "
            "for weights of other sizes): it is not a LoRA for this model",
            lora.path.c_str(), model_name.c_str(), s.tensors, s.misfit);
    SD_LOG_INFO("LoRA '%s' x%g (%s%s): %zu of %zu tensors applied to model weights, %zu unmatched",
                lora.path.c_str(), static_cast<double>(lora.multiplier), lora_mode_name(mode),
                lora.high_noise ? ", high-noise expert" : "", s.applied, s.tensors, s.unmatched);
    if (s.misfit > 0)
        SD_LOG_WARN(
            "LoRA '%s': %zu tensors are named for %s weights but have other sizes: is it "
            "for another kind of model?",
            lora.path.c_str(), s.misfit, model_name.c_str());
    else if (s.unmatched > 0)
        SD_LOG_WARN("LoRA '%s': %zu tensors match no weight of the model (names at debug level)",
                    lora.path.c_str(), s.unmatched);
}

}  // namespace

LoraMode resolve_lora_mode(lora_apply_mode_t requested, const ModelFiles& model) {
    if (requested == LORA_APPLY_IMMEDIATELY) return LoraMode::Immediately;
    if (requested == LORA_APPLY_AT_RUNTIME) return LoraMode::AtRuntime;
    for (const std::string& name : model.names()) {
        if (is_quantized(model.find(name)->dtype)) return LoraMode::AtRuntime;
    }
    return LoraMode::Immediately;
}

const char* lora_mode_name(LoraMode mode) {
    return mode == LoraMode::Immediately ? "merged" : "at run time";
}

LoraStats add_lora_patches(const ModelFiles& model, const LoraRequest& lora, LoraMode mode,
                           const std::string& model_name, WeightPatches& patches) {
    const LoraFile file = read_lora_file(lora.path);
    LoraStats s;
    s.tensors = file.tensor_count;
    s.unmatched = file.unknown.size();
    for (const std::string& name : file.unknown)
        SD_LOG_DEBUG("LoRA '%s': tensor '%s' is no LoRA part", lora.path.c_str(), name.c_str());
    for (const LoraModule& m : file.modules) {
        const LoraTarget target = m.kind() == LoraKind::Incomplete
                                      ? LoraTarget{}
                                      : find_lora_target(model, m.key, lora.high_noise);
        if (!target) {
            s.unmatched += m.tensor_count;
            SD_LOG_DEBUG("LoRA '%s': '%s' matches no model weight", lora.path.c_str(),
                         m.key.c_str());
            continue;
        }
        try {
            add_module(m, target, lora.multiplier, mode, patches[target.weight->name]);
            s.applied += m.tensor_count;
        } catch (const Error& e) {
            s.unmatched += m.tensor_count;
            s.misfit += m.tensor_count;
            SD_LOG_DEBUG("LoRA '%s': %s", lora.path.c_str(), e.what());
        }
    }
    report(lora, s, model_name, mode);
    return s;
}

const WeightPatches* LoraSet::update(const ModelFiles& model, const std::vector<LoraRequest>& loras,
                                     LoraMode mode, const std::string& model_name) {
    if (loras == current_ && mode == mode_) return current_.empty() ? nullptr : &patches_;
    patches_.clear();
    current_.clear();
    if (loras.empty()) return nullptr;
    const double start = now_seconds();
    WeightPatches built;
    for (const LoraRequest& l : loras) add_lora_patches(model, l, mode, model_name, built);
    patches_ = std::move(built);
    current_ = loras;
    mode_ = mode;
    SD_LOG_INFO("applied %zu LoRA%s (%s) to %zu weights in %.2f s", loras.size(),
                loras.size() == 1 ? "" : "s", lora_mode_name(mode), patches_.size(),
                now_seconds() - start);
    return &patches_;
}

}  // namespace sd
