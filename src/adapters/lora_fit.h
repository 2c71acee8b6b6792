// Whether a LoRA file fits a model, from the file's header alone (tensor names and shapes;
// no tensor read, no LoHa / LoKr delta built): each module mapped onto the model's weights as
// lora_apply.h maps it, its sizes checked as lora_math.h would check them. Cheap enough to
// run while a server request is parsed, so a LoRA for another family is the request's fault.
#pragma once

#include <string>

#include "io/model_files.h"

namespace sd {

// What a LoRA module patches: a model weight, whole or the rows [first_row, first_row +
// shape[0]) of a fused one; `shape` is the patched part's (the weight's own when whole).
struct LoraTarget {
    const TensorRecord* weight = nullptr;
    int64_t first_row = 0;
    Shape shape;
    bool swap_halves = false;  // the module's rows are the weight's with its halves swapped
    explicit operator bool() const { return weight != nullptr; }
    bool whole() const { return weight && shape == weight->shape; }
};

// The model weight a LoRA module's key names: the first of lora_target_candidates(key) the
// model has (a part of a fused weight when the candidate says so and the weight has room), or
// none. A high-noise LoRA (`<lora:|high_noise|...>`) patches the same names in a two-expert
// model's high-noise expert (Wan2.2 A14B) and nothing else.
LoraTarget find_lora_target(const ModelFiles& model, const std::string& key,
                            bool high_noise = false);

struct LoraFit {
    size_t tensors = 0;    // in the file
    size_t fitting = 0;    // of modules whose name and sizes fit a model weight
    size_t misfit = 0;     // of modules named for a model weight of other sizes
    std::string made_for;  // the family its names and sizes suggest ("SDXL"), or ""
};

// Throws sd::Error naming the file when it cannot be opened as a tensor file.
LoraFit lora_fit(const std::string& path, const ModelFiles& model);

// Throws sd::Error naming the file and `model_name` ("SD 1.x") when none of its tensors fits
// a weight of the model (the family it looks made for added where its names tell).
void check_lora_fits(const std::string& path, const ModelFiles& model,
                     const std::string& model_name);

}  // namespace sd
