#include "io/model_convert.h"

#include <algorithm>
#include <regex>

#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "io/imatrix.h"
#include "io/tensor_writer.h"
#include "ops/convert.h"
#include "tensor/quant_importance.h"

namespace sd {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::char_traits<char>::length(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

// `t` as `dtype`, each row quantized with the importance matrix's column weights.
Tensor quantize_weighted(const Tensor& t, DType dtype, const std::vector<float>& importance) {
    Tensor f = t.dtype() == DType::F32 ? t.contiguous() : convert(t, DType::F32).contiguous();
    const int64_t row = static_cast<int64_t>(importance.size());
    const int64_t rows = f.numel() / row;
    Tensor out = Tensor::empty(f.shape(), dtype);
    const float* src = f.data<float>();
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    const size_t row_size = row_bytes(dtype, row);
    parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            quantize_row_weighted(dtype, src + r * row, dst + static_cast<size_t>(r) * row_size,
                                  row, importance.data());
    });
    return out;
}

// Endings of the tensors the reference tool never converts, whatever the model: biases,
// norm and quantization scales.
constexpr const char* kKeptEndings[] = {".bias", ".scale", ".weight_scale"};

bool keeps_own_dtype(const std::string& name, const std::vector<std::string>& keep) {
    for (const char* e : kKeptEndings)
        if (ends_with(name, e)) return true;
    if (contains(name, "embedding")) return true;
    return std::any_of(keep.begin(), keep.end(),
                       [&](const std::string& k) { return contains(name, k.c_str()); });
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool output_is_safetensors(const std::string& path) {
    return path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
}

}  // namespace

TensorTypeRules parse_tensor_type_rules(const std::string& text) {
    TensorTypeRules rules;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string item = trim(
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        start = comma == std::string::npos ? text.size() + 1 : comma + 1;
        if (item.empty()) continue;
        size_t eq = item.rfind('=');
        if (eq == std::string::npos || eq == 0)
            fail("--tensor-type-rules: \"%s\" is not PATTERN=TYPE", item.c_str());
        std::string pattern = item.substr(0, eq), type = trim(item.substr(eq + 1));
        auto dtype = dtype_from_name(type);
        if (!dtype || *dtype == DType::I32)
            fail("--tensor-type-rules: unknown type \"%s\" in \"%s\"", type.c_str(), item.c_str());
        try {
            std::regex check(pattern);
        } catch (const std::regex_error& e) {
            fail("--tensor-type-rules: \"%s\" is not a valid regular expression: %s",
                 pattern.c_str(), e.what());
        }
        rules.emplace_back(pattern, *dtype);
    }
    return rules;
}

DType output_dtype(const std::string& name, const Shape& shape, DType source,
                   const TypeChoice& choice) {
    std::optional<DType> target = choice.type;
    for (const auto& [pattern, dtype] : choice.rules) {
        if (std::regex_search(name, std::regex(pattern))) {
            target = dtype;
            break;
        }
    }
    if (!target || source == DType::I32 || keeps_own_dtype(name, choice.keep)) return source;
    if (is_quantized(*target) &&
        (shape.size() == 0 || shape[shape.size() - 1] % block_size(*target) != 0))
        return source;
    return *target;
}

void convert_model(const ModelFiles& files, const ConvertOptions& options) {
    const CancelScope cancel_scope(options.cancel);
    const bool safetensors = output_is_safetensors(options.output_path);
    const TypeChoice choice{options.type, parse_tensor_type_rules(options.tensor_type_rules),
                            options.keep};
    std::vector<OutputTensor> outputs;
    std::map<std::string, size_t> counts;
    size_t weighted = 0;
    for (const std::string& name : files.names()) {
        const TensorRecord& r = files.get(name);
        DType dtype = output_dtype(name, r.shape, r.dtype, choice);
        if (safetensors && is_quantized(dtype)) {
            fail("%s: safetensors cannot hold %s tensors (tensor '%s'); write a .gguf file instead",
                 options.output_path.c_str(), dtype_name(dtype), name.c_str());
        }
        ++counts[dtype_name(dtype)];
        const TensorRecord* record = &r;
        // The importance matrix's column weights for this tensor, when one is loaded.
        std::vector<float> importance;
        if (has_weighted_quantization(dtype) && dtype != r.dtype && r.shape.size() >= 1) {
            importance = imatrix::importance(name);
            const int64_t row = r.shape[r.shape.size() - 1];
            if (!importance.empty() && static_cast<int64_t>(importance.size()) != row) {
                SD_LOG_WARN("imatrix: '%s' has %zu columns, the tensor's rows %lld; not used",
                            name.c_str(), importance.size(), static_cast<long long>(row));
                importance.clear();
            }
            if (!importance.empty()) ++weighted;
        }
        outputs.push_back({name, dtype, r.shape, [record, dtype, importance] {
                               cancellation_point();
                               Tensor t = record->load();
                               if (!importance.empty())
                                   return quantize_weighted(t, dtype, importance);
                               if (t.dtype() == dtype) return t.contiguous();
                               // Between two non-f32 types go through f32.
                               if (t.dtype() != DType::F32 && dtype != DType::F32)
                                   t = convert(t, DType::F32);
                               return convert(t, dtype);
                           }});
    }
    if (safetensors) {
        std::map<std::string, std::string> meta;
        for (const auto& [k, v] : options.extra_metadata) {
            if (auto* s = std::get_if<std::string>(&v.value)) meta[k] = *s;
        }
        write_safetensors(options.output_path, outputs, meta);
    } else {
        write_gguf(options.output_path, outputs, options.extra_metadata);
    }
    if (weighted > 0)
        SD_LOG_INFO("quantized %zu tensors with importance-matrix weights", weighted);
    else if (imatrix::entry_count() > 0 && options.type)
        SD_LOG_WARN("an importance matrix is loaded but no tensor written as %s matched it",
                    dtype_name(*options.type));
    std::string summary;
    for (const auto& [type, n] : counts) summary += strfmt(" %s:%zu", type.c_str(), n);
    SD_LOG_INFO("wrote %s: %zu tensors (%s )", options.output_path.c_str(), outputs.size(),
                summary.c_str());
}

}  // namespace sd
