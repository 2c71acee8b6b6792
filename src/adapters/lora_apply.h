// LoRAs on a loaded model: each requested file read, its modules matched to the model's
// weights by name (adapters/lora_names.h) and shape, and turned into the layer patches
// nn/weight_patch.h applies. Per LoRA one line says how many of its tensors matched a model
// weight and how many did not; a LoRA matching nothing (one for another family) is an error
// naming it, one with some tensors of other sizes a warning.
//
//   Immediately  each patched weight is merged once into a new buffer of the weight's dtype
//                (quantized types re-quantized), as the reference program merges; the
//                model's own (mmapped) weights are never written.
//   AtRuntime    the weight stays as stored; plain LoRA modules add scale * up(down(x)) in
//                the layer's forward, LoHa / LoKr / DoRA / diff modules their dense delta
//                (built once) through the layer's own op.
#pragma once

#include <string>
#include <vector>

#include "io/model_files.h"
#include "nn/weight_patch.h"
#include "stable-diffusion.h"

namespace sd {

struct LoraRequest {
    std::string path;
    float multiplier = 1.0f;
    bool high_noise = false;  // for a two-expert model's high-noise expert (find_lora_target)
    bool operator==(const LoraRequest& o) const = default;
};

enum class LoraMode { Immediately, AtRuntime };

// auto: at run time when the model holds any quantized weight, merged otherwise (the
// reference program's rule).
LoraMode resolve_lora_mode(lora_apply_mode_t requested, const ModelFiles& model);
const char* lora_mode_name(LoraMode mode);

struct LoraStats {
    size_t tensors = 0;    // in the file
    size_t applied = 0;    // belonging to a module that patched a model weight
    size_t unmatched = 0;  // no model weight of that name, or not of its size
    size_t misfit = 0;     // of those: the name matched but the sizes did not
};

// Adds the patches of one LoRA file to `patches` and logs its counts. Throws sd::Error when
// the file cannot be read or none of its modules fits a weight of the model. `model_name` names the
// model in the warnings ("SD 1.x").
LoraStats add_lora_patches(const ModelFiles& model, const LoraRequest& lora, LoraMode mode,
                           const std::string& model_name, WeightPatches& patches);

// The patches of a context's current LoRAs, rebuilt only when the list changes.
class LoraSet {
  public:
    // The patches for `loras` (nullptr for none). Throws sd::Error on a bad file, leaving no
    // LoRA applied.
    const WeightPatches* update(const ModelFiles& model, const std::vector<LoraRequest>& loras,
                                LoraMode mode, const std::string& model_name);

  private:
    std::vector<LoraRequest> current_;
    LoraMode mode_ = LoraMode::Immediately;
    WeightPatches patches_;
};

}  // namespace sd
