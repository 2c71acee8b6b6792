#include "adapters/lora_fit.h"

#include <map>

#include "adapters/lora_file.h"
#include "adapters/lora_names.h"
#include "base/error.h"
#include "io/component_roles.h"

namespace sd {
namespace {

using Parts = std::map<std::string, Shape>;  // part -> shape, one module

int64_t rows(const Shape& s) {
    return s.size() == 0 ? 1 : s[0];
}

// Values per row: a matrix of the first dim by the rest (lora_math's mat()).
int64_t cols(const Shape& s) {
    return s.numel() / std::max<int64_t>(1, rows(s));
}

// Elements of a Tucker product up^T-or-up x core x down (lora_math's tucker()).
int64_t tucker_numel(int64_t out, const Shape& core, int64_t in) {
    return core.size() == 4 ? out * in * core[2] * core[3] : -1;
}

// Elements of a LoHa / LoKr half: a @ b, or through its Tucker core t (a stored transposed).
int64_t pair_numel(const Parts& p, const std::string& a, const std::string& b,
                   const std::string& t) {
    const Shape &sa = p.at(a), &sb = p.at(b);
    if (p.count(t)) return tucker_numel(cols(sa), p.at(t), cols(sb));
    return rows(sa) * cols(sb);
}

// Whether the module's sizes fit a weight of `w`, as lora_math's deltas check them.
bool fits(LoraKind kind, const Parts& p, const Shape& w) {
    if (w.size() < 2) return false;
    switch (kind) {
        case LoraKind::LowRank: {
            const Shape &up = p.at("up"), &down = p.at("down");
            if (rows(up) != w[0] || cols(up) == 0) return false;
            if (p.count("mid")) return tucker_numel(rows(up), p.at("mid"), cols(down)) == w.numel();
            return cols(up) == rows(down) && rows(up) * cols(down) == w.numel();
        }
        case LoraKind::LoHa:
            return pair_numel(p, "hada_w1_a", "hada_w1_b", "hada_t1") == w.numel() &&
                   pair_numel(p, "hada_w2_a", "hada_w2_b", "hada_t2") == w.numel();
        case LoraKind::LoKr: {
            const int64_t a0 = p.count("lokr_w1") ? rows(p.at("lokr_w1")) : rows(p.at("lokr_w1_a"));
            const int64_t a1 = p.count("lokr_w1") ? cols(p.at("lokr_w1")) : cols(p.at("lokr_w1_b"));
            if (a0 <= 0 || a1 <= 0 || w[0] % a0 != 0 || w[1] % a1 != 0) return false;
            const int64_t w2 = p.count("lokr_w2")
                                   ? p.at("lokr_w2").numel()
                                   : pair_numel(p, "lokr_w2_a", "lokr_w2_b", "lokr_t2");
            return w2 * a0 * a1 == w.numel();
        }
        case LoraKind::Diff:
            return p.at("diff").numel() == w.numel();
        case LoraKind::Incomplete:
            break;
    }
    return false;
}

// The family a LoRA's own names and sizes suggest: a second text encoder means SDXL, else
// the context width its cross-attention keys read (768 SD 1.x, 1024 SD 2.x, 2048 SDXL).
std::string family_hint(const std::map<std::string, Parts>& modules) {
    for (const auto& [key, parts] : modules) {
        if (key.find("te2_") != std::string::npos ||
            key.find("text_encoder_2") != std::string::npos)
            return "SDXL";
        if (key.find("double_blocks") != std::string::npos) return "FLUX";
    }
    for (const auto& [key, parts] : modules) {
        const bool to_k = key.ends_with("attn2_to_k") || key.ends_with("attn2.to_k");
        if (!to_k || !parts.count("down")) continue;
        switch (cols(parts.at("down"))) {
            case 768:
                return "SD 1.x";
            case 1024:
                return "SD 2.x";
            case 2048:
                return "SDXL";
        }
    }
    return "";
}

// The part of `w` that `part` names, or none when the weight has no room for it.
LoraTarget part_of(const TensorRecord* w, const LoraPart& part) {
    if (part.block < 0) {
        const bool two_chunks = w->shape.size() == 2 && w->shape[0] == 2 * w->shape[1];
        return {w, 0, w->shape, part.swap_halves && two_chunks};
    }
    if (w->shape.size() != 2) return {};
    const int64_t in = w->shape[1], first = part.block * in;
    const int64_t rows = part.to_end ? w->shape[0] - first : in;
    if (rows <= 0 || first + rows > w->shape[0]) return {};
    return {w, first, Shape{rows, in}};
}

}  // namespace

LoraTarget find_lora_target(const ModelFiles& model, const std::string& key, bool high_noise) {
    const std::string_view low = canonical_prefix(ModelRole::DiffusionModel);
    const std::string high = canonical_prefix(ModelRole::HighNoiseDiffusionModel);
    for (const LoraPart& part : lora_target_candidates(key)) {
        const TensorRecord* r = nullptr;
        if (!high_noise) {
            r = model.find(part.name);
        } else if (part.name.compare(0, low.size(), low) == 0) {
            r = model.find(high + part.name.substr(low.size()));
        }
        if (!r) continue;
        if (LoraTarget t = part_of(r, part)) return t;
    }
    return {};
}

LoraFit lora_fit(const std::string& path, const ModelFiles& model) {
    const TensorFile file = open_tensor_file(path);
    std::map<std::string, Parts> modules;
    std::map<std::string, size_t> counts;
    for (const TensorRecord& r : file.tensors) {
        std::string key, part;
        if (!split_lora_name(r.name, key, part)) continue;
        modules[key][part] = r.shape;
        ++counts[key];
    }
    LoraFit fit;
    fit.tensors = file.tensors.size();
    for (const auto& [key, module_parts] : modules) {
        const auto& parts = module_parts;  // clang 14 (the fuzz build) cannot capture a binding
        const LoraKind kind = lora_kind([&](const std::string& p) { return parts.count(p) > 0; });
        const LoraTarget target =
            kind == LoraKind::Incomplete ? LoraTarget{} : find_lora_target(model, key);
        if (!target) continue;
        (fits(kind, parts, target.shape) ? fit.fitting : fit.misfit) += counts[key];
    }
    fit.made_for = family_hint(modules);
    return fit;
}

void check_lora_fits(const std::string& path, const ModelFiles& model,
                     const std::string& model_name) {
    const LoraFit fit = lora_fit(path, model);
    if (fit.fitting > 0) return;
    fail(
        "LoRA '%s' matches none of the %s model's weights (%zu tensors, %zu of them named for "
        "weights of other sizes): it is not a LoRA for this model%s",
        path.c_str(), model_name.c_str(), fit.tensors, fit.misfit,
        fit.made_for.empty() || fit.made_for == model_name
            ? ""
            : (" (it looks made for " + fit.made_for + ")").c_str());
}

}  // namespace sd
