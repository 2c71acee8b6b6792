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

// The dtype a tensor is written as. Tensors that are not weight matrices keep full
// precision, as in the reference tool: 1-D tensors (biases, norm scales) become f32;
// embeddings, the UNet's time/label embeddings and rows that are not whole blocks of a
// quantized type keep their own dtype.
DType output_dtype(const std::string& name, const Shape& shape, DType source,
                   std::optional<DType> target, const TensorTypeRules& rules);

struct ConvertOptions {
    std::string output_path;        // .gguf or .safetensors, chosen by extension
    std::optional<DType> type;      // --type; none keeps every tensor's dtype
    std::string tensor_type_rules;  // --tensor-type-rules
    std::map<std::string, MetadataValue> extra_metadata;  // e.g. the tokenizer vocabulary
    // Checked before each tensor and inside its conversion; a cancelled conversion throws
    // sd::Cancelled and leaves no output file (base/cancel.h).
    const CancelToken* cancel = nullptr;
};

// Converts and writes; logs one line a tensor at debug level and a summary at info.
void convert_model(const ModelFiles& files, const ConvertOptions& options);

}  // namespace sd
