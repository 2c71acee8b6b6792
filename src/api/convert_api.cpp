// The C API's convert(): a model file (plus an optional separate VAE) written as one GGUF
// or safetensors file of the requested weight type. Errors are logged, never thrown.
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "families/registry.h"
#include "io/model_convert.h"
#include "io/model_files.h"
#include "pipeline/run_scope.h"
#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"
#include "tokenizer/clip_tokenizer.h"
#include "tokenizer/llm_tokenizer.h"
#include "tokenizer/t5_tokenizer.h"

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

// The tokenizer vocabulary for a GGUF that holds a CLIP or a T5 text encoder, when one can
// be found (GGUF has one set of tokenizer keys: a file with both carries CLIP's).
std::map<std::string, MetadataValue> tokenizer_metadata(const ModelFiles& files,
                                                        const std::string& model_path,
                                                        const std::string& tokenizer_dir) {
    const TensorFile* model_file = files.files().empty() ? nullptr : &files.files().front();
    try {
        if (files.has_role(ModelRole::TextEncoder) || files.has_role(ModelRole::TextEncoder2)) {
            ClipTokenizerSearch search;
            search.tokenizer_dir = tokenizer_dir;
            search.model_path = model_path;
            search.model_file = model_file;
            ClipTokenizer tokenizer = find_clip_tokenizer(search);
            SD_LOG_INFO("embedding the CLIP tokenizer vocabulary (%zu tokens, %zu merges)",
                        tokenizer.vocab_size(), tokenizer.merge_count());
            return tokenizer.to_gguf_metadata();
        }
        if (files.has_role(ModelRole::T5)) {
            T5TokenizerSearch search;
            search.tokenizer_dir = tokenizer_dir;
            search.t5_path = model_path;
            if (model_file && T5Tokenizer::gguf_has_vocab(model_file->metadata))
                search.model_file = model_file;
            T5Tokenizer tokenizer = find_t5_tokenizer(search);
            SD_LOG_INFO("embedding the T5 tokenizer vocabulary (%zu pieces)",
                        tokenizer.vocab_size());
            return tokenizer.to_gguf_metadata();
        }
        // An LLM text encoder (its names are the role's, from --llm or recognised alone in -m):
        // the Qwen2 vocabulary, which llama.cpp's GGUF LLM files carry as well.
        if (files.has_role(ModelRole::Llm)) {
            LlmTokenizerSearch search;
            search.tokenizer_dir = tokenizer_dir;
            search.llm_path = model_path;
            search.llm_file = model_file;
            LlmTokenizer tokenizer = find_llm_tokenizer(search);
            SD_LOG_INFO("embedding the Qwen2 tokenizer vocabulary (%zu tokens, %zu merges)",
                        tokenizer.vocab_size(), tokenizer.merge_count());
            return tokenizer.to_gguf_metadata();
        }
    } catch (const Error& e) {
        SD_LOG_WARN("the GGUF will carry no tokenizer vocabulary: %s", e.what());
    }
    return {};
}

struct InputFile {
    const char* path;
    ModelRole role;
};

// `inputs` in order (each with the role of the C argument it came as); entries with a null or
// empty path are skipped. An input that cannot be read is named with its option.
void run_convert(const std::vector<InputFile>& inputs, const std::string& output, sd_type_t type,
                 const std::string& rules, const std::string& tokenizer_dir = "") {
    if (output.empty()) fail("convert: no output path given (-o)");
    ConvertOptions options;
    options.output_path = output;
    options.type = engine_dtype(type);
    options.tensor_type_rules = rules;
    options.keep = convert_keeps();
    ModelFiles files;
    std::string first;
    for (const InputFile& in : inputs) {
        if (!in.path || !*in.path) continue;
        if (first.empty()) first = in.path;
        try {
            files.add(in.path, in.role);
        } catch (const Error& e) {
            fail("convert: %s: %s", component_role(in.role).option, e.what());
        }
    }
    if (first.empty()) fail("convert: no input model given (-m)");
    if (is_gguf_path(output))
        options.extra_metadata = tokenizer_metadata(files, first, tokenizer_dir);
    convert_model(files, options);
}

template <class F>
bool logged(F&& run) {
    try {
        run();
        return true;
    } catch (const std::exception& e) {
        SD_LOG_ERROR("%s", e.what());
    } catch (...) {
        SD_LOG_ERROR("convert: unexpected error");
    }
    return false;
}

}  // namespace
}  // namespace sd::api

extern "C" {

bool convert(const char* input_path, const char* vae_path, const char* output_path,
             enum sd_type_t output_type, const char* tensor_type_rules, bool convert_name) {
    return sd_convert_with_tokenizer(input_path, vae_path, output_path, output_type,
                                     tensor_type_rules, convert_name, nullptr);
}

bool sd_convert_with_tokenizer(const char* input_path, const char* vae_path,
                               const char* output_path, enum sd_type_t output_type,
                               const char* tensor_type_rules, bool convert_name,
                               const char* tokenizer_dir) {
    using sd::ModelRole;
    return sd::api::logged([&] {
        if (!input_path || !*input_path) sd::fail("convert: no input model given (-m)");
        if (!convert_name)
            SD_LOG_DEBUG("convert: tensors are always written under their canonical names");
        sd::api::run_convert({{input_path, ModelRole::Checkpoint}, {vae_path, ModelRole::Vae}},
                             output_path ? output_path : "", output_type,
                             tensor_type_rules ? tensor_type_rules : "",
                             tokenizer_dir ? tokenizer_dir : "");
    });
}

bool convert_with_components(const char* model_path, const char* clip_l_path,
                             const char* clip_g_path, const char* t5xxl_path,
                             const char* diffusion_model_path, const char* vae_path,
                             const char* output_path, enum sd_type_t output_type,
                             const char* tensor_type_rules, bool convert_name, int n_threads) {
    using sd::ModelRole;
    return sd::api::logged([&] {
        sd::RunOptions run;  // runscope: n_threads for this conversion only
        run.threads = n_threads > 0 ? sd::threads_that_help(n_threads) : 0;
        const sd::RunScope scope(run);
        if (!convert_name)
            SD_LOG_DEBUG("convert: tensors are always written under their canonical names");
        sd::api::run_convert({{model_path, ModelRole::Checkpoint},
                              {diffusion_model_path, ModelRole::DiffusionModel},
                              {clip_l_path, ModelRole::TextEncoder},
                              {clip_g_path, ModelRole::TextEncoder2},
                              {t5xxl_path, ModelRole::T5},
                              {vae_path, ModelRole::Vae}},
                             output_path ? output_path : "", output_type,
                             tensor_type_rules ? tensor_type_rules : "");
    });
}

}  // extern "C"
