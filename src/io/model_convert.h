// -M convert: write the tensors of a model-file set into one GGUF or safetensors file,
// converting each to the requested type, as the reference tool's convert mode does.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/cancel.h"
#include "io/model_files.h"

namespace sd {

// "^vae\.=f16,model\.=q8_0": the first rule whose regex is found in a tensor's name
// (ECMAScript, searched anywhere in the name) sets that tensor's type.
using TensorTypeRules = std::vector<std::pair<std::string, DType>>;
TensorTypeRules parse_tensor_type_rules(const std::string& text);

// What decides a tensor's output type: --type, --tensor-type-rules and the name fragments
// of layers that stay in their own dtype (each family lists its own; Family::convert_keeps).
struct TypeChoice {
    std::optional<DType> type;      // none keeps every tensor's dtype
    TensorTypeRules rules;          // the first match replaces `type` for that tensor
    std::vector<std::string> keep;  // "img_in.", "time_embed." ...: found anywhere in the name
};

// The dtype a tensor is written as, chosen as the reference tool does: it keeps its own
// dtype when its name ends in .bias, .scale or .weight_scale, contains "embedding" or one of
// `choice.keep`, or, for a block-quantized type, when its rows (the last dimension) are not
// whole blocks. Every other tensor, 1-D norm weights included, takes the requested type.
DType output_dtype(const std::string& name, const Shape& shape, DType source,
                   const TypeChoice& choice);

struct ConvertOptions {
    std::string output_path;        // .gguf or .safetensors, chosen by extension
    std::optional<DType> type;      // --type; none keeps every tensor's dtype
    std::string tensor_type_rules;  // --tensor-type-rules
    std::vector<std::string> keep;  // TypeChoice::keep
    std::map<std::string, MetadataValue> extra_metadata;  // e.g. the tokenizer vocabulary
    // Checked before each tensor and inside its conversion; a cancelled conversion throws
    // sd::Cancelled and leaves no output file (base/cancel.h).
    const CancelToken* cancel = nullptr;
};

// Converts and writes; logs one line a tensor at debug level and a summary at info.
void convert_model(const ModelFiles& files, const ConvertOptions& options);

}  // namespace sd
