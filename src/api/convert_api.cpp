// The C API's convert(): a model file (plus an optional separate VAE) written as one GGUF
// or safetensors file of the requested weight type. Errors are logged, never thrown.
#include <exception>
#include <map>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "io/model_convert.h"
#include "io/model_files.h"
#include "stable-diffusion.h"
#include "tokenizer/clip_tokenizer.h"

namespace sd::api {
namespace {

bool is_gguf_path(const std::string& path) {
    return path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

std::optional<DType> engine_dtype(sd_type_t type) {
    if (type == SD_TYPE_COUNT) return std::nullopt;
    std::optional<DType> dtype = dtype_from_gguf_id(static_cast<int64_t>(type));
    if (!dtype || *dtype == DType::I32)
        fail(
            "convert: weight type %s (%d) is not one this engine can write; use f32, f16, bf16, "
            "q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl or iq4_xs",
            sd_type_name(type), static_cast<int>(type));
    return dtype;
}

// The CLIP vocabulary for a GGUF that holds a CLIP text encoder, when one can be found.
std::map<std::string, MetadataValue> tokenizer_metadata(const ModelFiles& files,
                                                        const std::string& model_path) {
    if (!files.has_prefix("cond_stage_model.")) return {};
    ClipTokenizerSearch search;
    search.model_path = model_path;
    if (!files.files().empty()) search.model_file = &files.files().front();
    try {
        ClipTokenizer tokenizer = find_clip_tokenizer(search);
        SD_LOG_INFO("embedding the CLIP tokenizer vocabulary (%zu tokens, %zu merges)",
                    tokenizer.vocab_size(), tokenizer.merge_count());
        return tokenizer.to_gguf_metadata();
    } catch (const Error& e) {
        SD_LOG_WARN("the GGUF will carry no CLIP tokenizer vocabulary: %s", e.what());
    }
    return {};
}

void run_convert(const std::string& input, const std::string& vae, const std::string& output,
                 sd_type_t type, const std::string& rules) {
    if (input.empty()) fail("convert: no input model given (-m)");
    if (output.empty()) fail("convert: no output path given (-o)");
    ConvertOptions options;
    options.output_path = output;
    options.type = engine_dtype(type);
    options.tensor_type_rules = rules;
    ModelFiles files;
    files.add(input, ModelRole::Checkpoint);
    if (!vae.empty()) files.add(vae, ModelRole::Vae);
    if (is_gguf_path(output)) options.extra_metadata = tokenizer_metadata(files, input);
    convert_model(files, options);
}

}  // namespace
}  // namespace sd::api

extern "C" bool convert(const char* input_path, const char* vae_path, const char* output_path,
                        enum sd_type_t output_type, const char* tensor_type_rules,
                        bool convert_name) {
    try {
        if (!convert_name)
            SD_LOG_DEBUG("convert: tensors are always written under their canonical names");
        sd::api::run_convert(input_path ? input_path : "", vae_path ? vae_path : "",
                             output_path ? output_path : "", output_type,
                             tensor_type_rules ? tensor_type_rules : "");
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
    } catch (...) {
        SD_LOG_ERROR("convert: unexpected error");
    }
    return false;
}
