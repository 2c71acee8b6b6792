#include "adapters/lora_file.h"

#include <utility>

#include "base/error.h"
#include "io/tensor_file.h"
#include "ops/convert.h"

namespace sd {
namespace {

// Name endings and the part they are; longer endings first where one ends another.
const std::pair<const char*, const char*> kParts[] = {
    {".lora_down.weight", "down"},
    {".lora_up.weight", "up"},
    {".lora_mid.weight", "mid"},
    {".lora_down", "down"},
    {".lora_up", "up"},
    {".lora_mid", "mid"},
    {".lora_A.weight", "down"},
    {".lora_B.weight", "up"},
    {".lora_A.default.weight", "down"},
    {".lora_B.default.weight", "up"},
    {"_lora.down.weight", "down"},  // diffusers attention processors: to_q_lora.down
    {"_lora.up.weight", "up"},
    {".lora.down.weight", "down"},
    {".lora.up.weight", "up"},
    {".lora_linear_layer.down.weight", "down"},
    {".lora_linear_layer.up.weight", "up"},
    {".dora_scale", "dora_scale"},
    {".alpha", "alpha"},
    {".scale", "scale"},
    {".hada_w1_a", "hada_w1_a"},
    {".hada_w1_b", "hada_w1_b"},
    {".hada_w2_a", "hada_w2_a"},
    {".hada_w2_b", "hada_w2_b"},
    {".hada_t1", "hada_t1"},
    {".hada_t2", "hada_t2"},
    {".lokr_w1", "lokr_w1"},
    {".lokr_w1_a", "lokr_w1_a"},
    {".lokr_w1_b", "lokr_w1_b"},
    {".lokr_w2", "lokr_w2"},
    {".lokr_w2_a", "lokr_w2_a"},
    {".lokr_w2_b", "lokr_w2_b"},
    {".lokr_t2", "lokr_t2"},
    {".diff", "diff"},
};

bool ends_with(const std::string& s, const std::string& end) {
    return s.size() > end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

bool split_lora_name(const std::string& name, std::string& key, std::string& part) {
    size_t best = 0;
    for (const auto& [ending, role] : kParts) {
        const std::string e = ending;
        if (e.size() > best && ends_with(name, e)) {
            best = e.size();
            key = name.substr(0, name.size() - e.size());
            part = role;
        }
    }
    return best > 0;
}

LoraKind LoraModule::kind() const {
    return lora_kind([this](const std::string& part) { return has(part); });
}

LoraKind lora_kind(const std::function<bool(const std::string&)>& has) {
    if (has("down") && has("up")) return LoraKind::LowRank;
    if (has("hada_w1_a") && has("hada_w1_b") && has("hada_w2_a") && has("hada_w2_b"))
        return LoraKind::LoHa;
    const bool w1 = has("lokr_w1") || (has("lokr_w1_a") && has("lokr_w1_b"));
    const bool w2 = has("lokr_w2") || (has("lokr_w2_a") && has("lokr_w2_b"));
    if (w1 && w2) return LoraKind::LoKr;
    if (has("diff")) return LoraKind::Diff;
    return LoraKind::Incomplete;
}

void check_lora_file(const std::string& path) {
    const TensorFile file = open_tensor_file(path);
    std::string key, part;
    for (const TensorRecord& r : file.tensors) {
        if (split_lora_name(r.name, key, part)) return;
    }
    fail(
        "%s holds no LoRA tensors (%zu tensors, none ending in lora_down / lora_A / hada_* / "
        "lokr_* ...)",
        path.c_str(), file.tensors.size());
}

LoraFile read_lora_file(const std::string& path) {
    TensorFile file = open_tensor_file(path);
    LoraFile out;
    out.path = path;
    out.format = file.format;
    out.tensor_count = file.tensors.size();
    std::map<std::string, LoraModule> modules;
    for (const TensorRecord& r : file.tensors) {
        std::string key, part;
        if (!split_lora_name(r.name, key, part)) {
            out.unknown.push_back(r.name);
            continue;
        }
        LoraModule& m = modules[key];
        m.key = key;
        ++m.tensor_count;
        Tensor t = r.load();
        m.parts[part] = t.dtype() == DType::F32 ? t.contiguous() : convert(t, DType::F32);
    }
    for (auto& [key, m] : modules) out.modules.push_back(std::move(m));
    return out;
}

}  // namespace sd
