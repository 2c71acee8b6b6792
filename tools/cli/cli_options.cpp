#include "cli_options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <strings.h>

#include "help_layout.h"
#include "io/component_roles.h"

namespace cli {
namespace {

// Why a value was refused; the parser adds the option and the value to the message.
struct BadValue {
    std::string reason;
};

int to_int(const std::string& v) {
    int out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
        throw BadValue{"expected an integer"};
    return out;
}

int64_t to_int64(const std::string& v) {
    int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size())
        throw BadValue{"expected an integer"};
    return out;
}

float to_float(const std::string& v) {
    errno = 0;
    char* end = nullptr;
    float out = std::strtof(v.c_str(), &end);
    if (v.empty() || std::isspace(static_cast<unsigned char>(v[0])) || *end != '\0' ||
        errno == ERANGE || !std::isfinite(out))
        throw BadValue{"expected a finite number"};
    return out;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, sep)) parts.push_back(item);
    return parts;
}

// "[7,8,9]" or "7,8,9".
std::vector<int> to_layers(std::string v) {
    v = trim(v);
    if (!v.empty() && v.front() == '[') v.erase(0, 1);
    if (!v.empty() && v.back() == ']') v.pop_back();
    std::vector<int> layers;
    for (std::string part : split(v, ',')) {
        part = trim(part);
        if (part.empty()) continue;
        for (const std::string& p : split(part, ' '))
            if (!trim(p).empty()) layers.push_back(to_int(trim(p)));
    }
    return layers;
}

// "14.61,7.8,3.5,0.0", brackets allowed.
std::vector<float> to_floats(std::string v) {
    v = trim(v);
    if (!v.empty() && v.front() == '[') v.erase(0, 1);
    if (!v.empty() && v.back() == ']') v.pop_back();
    std::vector<float> values;
    for (const std::string& part : split(v, ','))
        if (!trim(part).empty()) values.push_back(to_float(trim(part)));
    if (values.empty()) throw BadValue{"expected comma-separated numbers"};
    return values;
}

// "32x32" or "32" into x and y.
template <class T, class F>
void to_pair(const std::string& v, F convert, T* x, T* y) {
    size_t pos = v.find('x');
    if (pos == std::string::npos) {
        *x = *y = convert(v);
    } else {
        *x = convert(v.substr(0, pos));
        *y = convert(v.substr(pos + 1));
    }
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

template <class E, class Count>
std::vector<std::string> enum_names(Count count, const char* (*name)(E)) {
    std::vector<std::string> names;
    for (int i = 0; i < static_cast<int>(count); ++i) names.push_back(name(static_cast<E>(i)));
    return names;
}

std::string choice_hint(const std::vector<std::string>& names) {
    std::string hint = "{";
    hint += join(names);
    hint += '}';
    return hint;
}

// Looks `v` up with `parse`, which returns `invalid` for an unknown name.
template <class E>
E to_enum(const std::string& v, E (*parse)(const char*), E invalid,
          const std::vector<std::string>& names) {
    E e = parse(v.c_str());
    if (e == invalid) throw BadValue{"expected one of " + join(names)};
    return e;
}

sd_type_t to_weight_type(const std::string& v) {
    sd_type_t t = str_to_sd_type(v.c_str());
    if (t != SD_TYPE_COUNT) return t;
    for (int i = 0; i < SD_TYPE_COUNT; ++i) {
        const char* name = sd_type_name(static_cast<sd_type_t>(i));
        if (strcasecmp(name, v.c_str()) == 0) return static_cast<sd_type_t>(i);
    }
    throw BadValue{
        "expected a weight type such as f32, f16, bf16, q8_0, q5_0, q5_1, q4_0, q4_1, q6_K, "
        "q5_K, q4_K, q3_K, q2_K, iq4_nl, iq4_xs"};
}

std::string from_list(const std::string& v, const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        throw BadValue{"expected one of " + join(allowed)};
    return v;
}

// --model-args key=value,...: checked by the library (its one list of keys) for an early error.
void apply_model_args(CliParams& p, const std::string& v) {
    char why[512];
    if (!sd_check_model_args(v.c_str(), why, sizeof why)) throw BadValue{why};
    p.model_args = v;
}

using Apply = std::function<void(CliParams&, const std::string&)>;

OptionSpec make(const char* s, const char* l, Group g, Arg a, std::string hint, std::string def,
                std::string help, Apply apply, std::string not_built = "") {
    return OptionSpec{s,
                      l,
                      g,
                      a,
                      std::move(hint),
                      std::move(def),
                      std::move(help),
                      std::move(apply),
                      std::move(not_built)};
}

OptionSpec text(const char* s, const char* l, Group g, std::string CliParams::*field,
                std::string def, std::string help, std::string not_built = "") {
    return make(
        s, l, g, Arg::String, "<string>", std::move(def), std::move(help),
        [field](CliParams& p, const std::string& v) { p.*field = v; }, not_built);
}

OptionSpec integer(const char* s, const char* l, Group g, int CliParams::*field, std::string def,
                   std::string help, std::string not_built = "") {
    return make(
        s, l, g, Arg::Int, "<int>", std::move(def), std::move(help),
        [field](CliParams& p, const std::string& v) { p.*field = to_int(v); }, not_built);
}

OptionSpec number(const char* s, const char* l, Group g, float CliParams::*field, std::string def,
                  std::string help, std::string not_built = "") {
    return make(
        s, l, g, Arg::Float, "<float>", std::move(def), std::move(help),
        [field](CliParams& p, const std::string& v) { p.*field = to_float(v); }, not_built);
}

OptionSpec flag(const char* s, const char* l, Group g, bool CliParams::*field, bool value,
                std::string help, std::string not_built = "") {
    return make(
        s, l, g, Arg::None, "", "off", std::move(help),
        [field, value](CliParams& p, const std::string&) { p.*field = value; }, not_built);
}

OptionSpec int_field(const char* s, const char* l, Group g, std::string def, std::string help,
                     std::function<int&(CliParams&)> field) {
    return make(s, l, g, Arg::Int, "<int>", std::move(def), std::move(help),
                [field](CliParams& p, const std::string& v) { field(p) = to_int(v); });
}

OptionSpec float_field(const char* s, const char* l, Group g, std::string def, std::string help,
                       std::function<float&(CliParams&)> field) {
    return make(s, l, g, Arg::Float, "<float>", std::move(def), std::move(help),
                [field](CliParams& p, const std::string& v) { field(p) = to_float(v); });
}

std::vector<std::string> sampler_names() {
    return enum_names<sample_method_t>(SAMPLE_METHOD_COUNT, sd_sample_method_name);
}

std::vector<std::string> scheduler_names() {
    return enum_names<scheduler_t>(SCHEDULER_COUNT, sd_scheduler_name);
}

std::vector<std::string> rng_names() {
    return enum_names<rng_type_t>(RNG_TYPE_COUNT, sd_rng_type_name);
}

std::vector<OptionSpec> program_options() {
    const Group G = Group::Cli;
    const std::vector<std::string> modes = {"img_gen", "vid_gen", "convert", "upscale", "metadata"};
    const std::vector<std::string> previews = enum_names<preview_t>(PREVIEW_COUNT, sd_preview_name);
    return {
        text("-o", "--output", G, &CliParams::output_path, "./output.png",
             "path to write the result image to; a printf-style %d (e.g. output_%03d.png) numbers "
             "the images of a batch (or a video's frames); a video's single file is an animated "
             ".webp, a .webm or else an .avi"),
        integer("", "--output-begin-idx", G, &CliParams::output_begin_idx, "0",
                "first index of the output image sequence (non-negative)"),
        text("", "--preview-path", G, &CliParams::preview_path, "./preview.png",
             "path to write the preview image to"),
        integer("", "--preview-interval", G, &CliParams::preview_interval, "1",
                "denoising steps between updates of the preview image"),
        flag("", "--canny", G, &CliParams::canny, true,
             "apply the Canny edge preprocessor to --control-image (as FLUX.1 Canny-dev expects)"),
        flag("", "--convert-name", G, &CliParams::convert_name, true,
             "write canonical tensor names (convert mode; this engine always does)"),
        flag("-v", "--verbose", G, &CliParams::verbose, true, "print extra information"),
        flag("", "--color", G, &CliParams::color, true, "colour the log tags by level"),
        flag("", "--taesd-preview-only", G, &CliParams::taesd_preview_only, true,
             "use TAESD for previews only, not for the final image (with --preview tae)"),
        flag("", "--preview-noisy", G, &CliParams::preview_noisy, true,
             "preview the noisy inputs of the model instead of the denoised outputs"),
        make("-M", "--mode", G, Arg::Choice, choice_hint(modes), "img_gen", "run mode",
             [modes](CliParams& p, const std::string& v) {
                 from_list(v, modes);
                 p.mode =
                     static_cast<Mode>(std::find(modes.begin(), modes.end(), v) - modes.begin());
             }),
        make("", "--preview", G, Arg::Choice, choice_hint(previews), "none", "preview method",
             [previews](CliParams& p, const std::string& v) {
                 p.preview_method = to_enum(v, str_to_preview, PREVIEW_COUNT, previews);
             }),
        flag("-h", "--help", G, &CliParams::help, true, "show this help and exit"),
        text("", "--image", G, &CliParams::image_path, "none",
             "the image to inspect (metadata mode)"),
        make("", "--metadata-format", G, Arg::Choice, "{text, json}", "text",
             "output format of metadata mode",
             [](CliParams& p, const std::string& v) {
                 p.metadata_format = from_list(v, {"text", "json"});
             }),
        flag("", "--metadata-raw", G, &CliParams::metadata_raw, true,
             "metadata mode: add hex previews of payloads that are not decoded"),
        flag("", "--metadata-brief", G, &CliParams::metadata_brief, true,
             "metadata mode: cut long text values short in text output"),
        flag("", "--metadata-all", G, &CliParams::metadata_all, true,
             "metadata mode: also list structural entries (IHDR, IDAT, image segments)"),
        flag("", "--list-families", G, &CliParams::list_families, true,
             "list the model families (the files each takes, whether this build runs it) and "
             "exit"),
        flag("", "--list-devices", G, &CliParams::list_devices, true,
             "list the compute devices and exit"),
        text("", "--rpc-servers", G, &CliParams::rpc_servers, "none",
             "comma-separated RPC servers to offload to", "RPC offloading"),
        make("", "--imat-in", G, Arg::String, "<string>", "none",
             "importance matrix file for -M convert (importance-weighted k-quants and iq4); "
             "repeat to add files. With --imat-out, the collection continues from them",
             [](CliParams& p, const std::string& v) { p.imat_in.push_back(v); }),
        text("", "--imat-out", G, &CliParams::imat_out, "none",
             "collect an importance matrix while generating and write it to this file"),
        text("", "--tokenizer-dir", G, &CliParams::tokenizer_dir,
             "$SD_TOKENIZER_DIR, else tokenizer/ beside the model",
             "folder of tokenizer vocabularies: clip/ (vocab.json, merges.txt), t5/ "
             "(spiece.model or tokenizer.json), qwen2/ (tokenizer.json or vocab.json, merges.txt)"),
    };
}

// Where sd-cli keeps the file of each component role (io/component_roles.h), in ModelRole's
// order; the members are named as sd_ctx_params_t's fields, which get them.
struct RolePath {
    sd::ModelRole role;
    std::string CliParams::*path;
};
constexpr RolePath kRolePaths[] = {
    {sd::ModelRole::Checkpoint, &CliParams::model_path},
    {sd::ModelRole::DiffusionModel, &CliParams::diffusion_model_path},
    {sd::ModelRole::HighNoiseDiffusionModel, &CliParams::high_noise_diffusion_model_path},
    {sd::ModelRole::UncondDiffusionModel, &CliParams::uncond_diffusion_model_path},
    {sd::ModelRole::TextEncoder, &CliParams::clip_l_path},
    {sd::ModelRole::TextEncoder2, &CliParams::clip_g_path},
    {sd::ModelRole::ClipVision, &CliParams::clip_vision_path},
    {sd::ModelRole::T5, &CliParams::t5xxl_path},
    {sd::ModelRole::Llm, &CliParams::llm_path},
    {sd::ModelRole::LlmVision, &CliParams::llm_vision_path},
    {sd::ModelRole::Vae, &CliParams::vae_path},
    {sd::ModelRole::AudioVae, &CliParams::audio_vae_path},
    {sd::ModelRole::EmbeddingsConnectors, &CliParams::embeddings_connectors_path},
};
static_assert(sd::rows_in_role_order(kRolePaths), "one CliParams path per ModelRole, in order");

// The component file options, one a role of the table (and its deprecated spelling).
std::vector<OptionSpec> component_file_options() {
    std::vector<OptionSpec> out;
    for (const sd::ComponentRole& r : sd::component_roles()) {
        std::string CliParams::*path = kRolePaths[static_cast<size_t>(r.role)].path;
        out.push_back(text(r.short_option, r.option, Group::Context, path, "none", r.help));
        if (r.old_option[0]) {
            out.push_back(text("", r.old_option, Group::Context, path, "none",
                               std::string("alias of ") + r.option + " (deprecated)"));
        }
    }
    return out;
}

// The other files: side models, folders, rules.
std::vector<OptionSpec> model_file_options() {
    const Group G = Group::Context;
    return {
        text("", "--taesd", G, &CliParams::taesd_path, "none",
             "path to TAESD, the tiny autoencoder for fast decoding and previews (lower quality); "
             "TAEHV (taew2_1, taew2_2) for a Wan video model"),
        text("", "--tae", G, &CliParams::taesd_path, "none", "alias of --taesd"),
        text("", "--control-net", G, &CliParams::control_net_path, "none",
             "path to a ControlNet model"),
        text("", "--embd-dir", G, &CliParams::embedding_dir, "none",
             "folder of textual-inversion embeddings"),
        text("", "--lora-model-dir", G, &CliParams::lora_model_dir, ".",
             "folder the <lora:NAME:WEIGHT> prompt tags are looked up in"),
        text("", "--hires-upscalers-dir", G, &CliParams::hires_upscalers_dir, "none",
             "folder of upscaler models --hires-upscaler can name"),
        text("", "--tensor-type-rules", G, &CliParams::tensor_type_rules, "none",
             "weight type per tensor name pattern, e.g. \"^vae\\.=f16,model\\.=q8_0\""),
        text("", "--photo-maker", G, &CliParams::photo_maker_path, "none",
             "path to a PhotoMaker model"),
        text("", "--upscale-model", G, &CliParams::esrgan_path, "none",
             "path to an ESRGAN model (upscale mode, or after generating)"),
        text("", "--ip-adapter", G, &CliParams::ip_adapter_path, "none",
             "path to an IP-Adapter model", "IP-Adapter"),
        text("", "--motion-module", G, &CliParams::motion_module_path, "none",
             "path to an AnimateDiff motion module", "AnimateDiff motion modules"),
        text("", "--pulid-weights", G, &CliParams::pulid_weights_path, "none",
             "path to the PuLID weights", "PuLID"),
        make("", "--model-args", G, Arg::String, "<string>", "none",
             std::string("model-specific switches key=value,...: ") + sd_model_args_keys() +
                 " (compute_type and tokenizer_dir as --compute-type and --tokenizer-dir, "
                 "which win over them)",
             apply_model_args),
    };
}

std::vector<OptionSpec> runtime_options() {
    const Group G = Group::Context;
    const std::vector<std::string> rngs = rng_names();
    const std::vector<std::string> predictions =
        enum_names<prediction_t>(PREDICTION_COUNT, sd_prediction_name);
    const std::vector<std::string> lora_modes =
        enum_names<lora_apply_mode_t>(LORA_APPLY_MODE_COUNT, sd_lora_apply_mode_name);
    const std::vector<std::string> vae_formats = {"auto", "flux", "sd3", "flux2"};
    const std::vector<std::string> compute_types =
        enum_names<sd_compute_type_t>(SD_COMPUTE_TYPE_COUNT, sd_compute_type_name);
    return {
        integer("-t", "--threads", G, &CliParams::n_threads, "-1",
                "threads to compute with; <= 0 uses the number of physical cores"),
        integer("", "--max-prompt-tokens", G, &CliParams::max_prompt_tokens,
                std::to_string(SD_DEFAULT_MAX_PROMPT_TOKENS),
                "the most tokens a prompt (and a negative prompt) may have, 75 a CLIP chunk; a "
                "longer one is refused before it is encoded; <= 0: no limit"),
        make("", "--type", G, Arg::Choice, "<type>", "the type of each weight in the file",
             "weight type to convert the weights to (f32, f16, bf16, q8_0, q5_0, q5_1, q4_0, "
             "q4_1, q6_K, q5_K, q4_K, q3_K, q2_K, iq4_nl, iq4_xs)",
             [](CliParams& p, const std::string& v) { p.wtype = to_weight_type(v); }),
        make("", "--rng", G, Arg::Choice, choice_hint(rngs), "cuda",
             "noise generator: cuda (as the sd-webui), cpu (as ComfyUI), std_default",
             [rngs](CliParams& p, const std::string& v) {
                 p.rng_type = to_enum(v, str_to_rng_type, RNG_TYPE_COUNT, rngs);
             }),
        make("", "--sampler-rng", G, Arg::Choice, choice_hint(rngs), "same as --rng",
             "noise generator of the sampler's steps",
             [rngs](CliParams& p, const std::string& v) {
                 p.sampler_rng_type = to_enum(v, str_to_rng_type, RNG_TYPE_COUNT, rngs);
             }),
        make("", "--prediction", G, Arg::Choice, choice_hint(predictions), "from the model",
             "prediction type override",
             [predictions](CliParams& p, const std::string& v) {
                 p.prediction = to_enum(v, str_to_prediction, PREDICTION_COUNT, predictions);
             }),
        make("", "--lora-apply-mode", G, Arg::Choice, choice_hint(lora_modes), "auto",
             "how LoRAs are applied: merged into the weights (immediately) or at run time; auto "
             "merges unless the weights are quantized",
             [lora_modes](CliParams& p, const std::string& v) {
                 p.lora_apply_mode =
                     to_enum(v, str_to_lora_apply_mode, LORA_APPLY_MODE_COUNT, lora_modes);
             }),
        make("", "--vae-format", G, Arg::Choice, choice_hint(vae_formats), "auto",
             "latent format of a standalone VAE",
             [vae_formats](CliParams& p, const std::string& v) {
                 from_list(v, vae_formats);
                 p.vae_format = static_cast<sd_vae_format_t>(
                     std::find(vae_formats.begin(), vae_formats.end(), v) - vae_formats.begin() -
                     1);
             }),
        text("", "--max-vram", G, &CliParams::max_vram, "none (no limit)",
             "GiB budget for weights on a device: 3.2, -1 (auto) or DEVICE=GiB,... (no effect "
             "on the CPU)"),
        text("", "--backend", G, &CliParams::backend, "cpu",
             "compute device for all (cpu) or per component (te=cpu,vae=cpu,diffusion=cpu); "
             "--list-devices shows the devices"),
        text("", "--params-backend", G, &CliParams::params_backend, "where they compute",
             "where weights live, for all or per component (*=cpu, diffusion=disk): cpu (RAM) "
             "or disk (read from the file for each layer, released after use)"),
        make("", "--compute-type", G, Arg::Choice, choice_hint(compute_types), "auto",
             "arithmetic of linear / conv layers: bf16 rounds their inputs to bf16 and uses "
             "AVX512-BF16 dot products (f32 accumulation); auto does so for the layers whose "
             "weights are stored in bf16, as the reference; f32 where the CPU has none",
             [compute_types](CliParams& p, const std::string& v) {
                 p.compute_type =
                     to_enum(v, str_to_sd_compute_type, SD_COMPUTE_TYPE_COUNT, compute_types);
             }),
        text("", "--split-mode", G, &CliParams::split_mode, "none",
             "how a model spanning several devices is split (layer, row)",
             "multi-device splitting"),
        flag("", "--offload-to-cpu", G, &CliParams::offload_to_cpu, true,
             "keep the weights in RAM and move them to the device when needed"),
        flag("", "--stream-layers", G, &CliParams::stream_layers, true,
             "stream weights layer by layer (on the CPU: as --params-backend disk)"),
        flag("", "--auto-fit", G, &CliParams::auto_fit, true,
             "with no --backend: place the diffusion model and the VAE on the GPU with the most "
             "memory, by their sizes (streaming the diffusion weights where they do not fit)"),
        flag("", "--eager-load", G, &CliParams::eager_load, true,
             "load every weight when the model loads instead of on first use", "eager loading"),
        flag("", "--mmap", G, &CliParams::enable_mmap, true,
             "accepted for the reference's scripts: model files are always memory-mapped"),
        flag("", "--control-net-cpu", G, &CliParams::control_net_cpu, true,
             "keep the ControlNet on the CPU"),
        flag("", "--clip-on-cpu", G, &CliParams::clip_on_cpu, true,
             "keep the text encoders on the CPU (CPU backend: in RAM between uses)"),
        flag("", "--vae-on-cpu", G, &CliParams::vae_on_cpu, true,
             "keep the VAE on the CPU (CPU backend: in RAM between uses)"),
        flag("", "--fa", G, &CliParams::flash_attn, true, "use flash attention"),
        flag("", "--diffusion-fa", G, &CliParams::diffusion_flash_attn, true,
             "use flash attention in the diffusion model only"),
        flag("", "--diffusion-conv-direct", G, &CliParams::diffusion_conv_direct, true,
             "direct convolution in the diffusion model"),
        flag("", "--vae-conv-direct", G, &CliParams::vae_conv_direct, true,
             "direct convolution in the VAE"),
        flag("", "--circular", G, &CliParams::circular, true,
             "circular padding of convolutions (tileable images)"),
        flag("", "--circularx", G, &CliParams::circular_x, true, "circular padding along x only"),
        flag("", "--circulary", G, &CliParams::circular_y, true, "circular padding along y only"),
        flag("", "--force-sdxl-vae-conv-scale", G, &CliParams::force_sdxl_vae_conv_scale, true,
             "force the conv scale of the SDXL VAE"),
    };
}

std::vector<OptionSpec> input_options() {
    const Group G = Group::Generation;
    return {
        text("-p", "--prompt", G, &CliParams::prompt, "\"\"", "the prompt to render"),
        text("-n", "--negative-prompt", G, &CliParams::negative_prompt, "\"\"",
             "the negative prompt"),
        text("", "--prompt-file", G, &CliParams::prompt_file, "none",
             "read the prompt from a file"),
        text("", "--negative-prompt-file", G, &CliParams::negative_prompt_file, "none",
             "read the negative prompt from a file"),
        text("-i", "--init-img", G, &CliParams::init_image_path, "none",
             "path to the init image (img2img; the input of upscale mode)"),
        text("", "--end-img", G, &CliParams::end_image_path, "none",
             "path to the end image (first/last-frame video)"),
        text("", "--mask", G, &CliParams::mask_image_path, "none",
             "path to the inpainting mask (FLUX.1 Fill needs it with -i)"),
        text(
            "", "--control-image", G, &CliParams::control_image_path, "none",
            "path to the ControlNet condition image, or the control image FLUX.1 Canny / Depth dev "
            "need (encoded by the VAE)"),
        text("", "--control-video", G, &CliParams::control_video_path, "none",
             "folder of control video frames, taken in file name order"),
        text("", "--pm-id-images-dir", G, &CliParams::pm_id_images_dir, "none",
             "folder of PhotoMaker identity images"),
        text("", "--pm-id-embed-path", G, &CliParams::pm_id_embed_path, "none",
             "path to a PhotoMaker v2 identity embedding"),
        make("-r", "--ref-image", G, Arg::String, "<string>", "none",
             "reference image (Kontext / edit models); may be given several times",
             [](CliParams& p, const std::string& v) { p.ref_image_paths.push_back(v); }),
        text("", "--ref-image-args", G, &CliParams::ref_image_args, "none",
             "how the reference images are prepared: preset=NAME then key=value overrides "
             "(ref_index_mode, resize_before_vae, vae_input_max_pixels, ...)"),
        make(
            "", "--ref-video", G, Arg::String, "<string>", "none",
            "reference video; may be given several times",
            [](CliParams& p, const std::string& v) { p.ref_video_paths.push_back(v); },
            "reference videos"),
        make(
            "", "--ref-audio", G, Arg::String, "<string>", "none",
            "reference audio; may be given several times",
            [](CliParams& p, const std::string& v) { p.ref_audio_paths.push_back(v); },
            "reference audio"),
        make(
            "", "--ref-video-audio", G, Arg::String, "<string>", "none",
            "soundtrack of a reference video; may be given several times",
            [](CliParams& p, const std::string& v) { p.ref_video_audio_paths.push_back(v); },
            "reference audio"),
        text("", "--ip-adapter-image", G, &CliParams::ip_adapter_image, "none",
             "image prompt for the IP-Adapter", "IP-Adapter"),
        number("", "--ip-adapter-strength", G, &CliParams::ip_adapter_strength, "1.0",
               "strength of the IP-Adapter image prompt", "IP-Adapter"),
        text("", "--pulid-id-embedding", G, &CliParams::pulid_id_embedding, "none",
             "path to a PuLID identity embedding", "PuLID"),
        number("", "--pulid-id-weight", G, &CliParams::pulid_id_weight, "1.0",
               "weight of the PuLID identity", "PuLID"),
        integer("", "--qwen-image-layers", G, &CliParams::qwen_image_layers, "3",
                "RGBA layers a Qwen-Image-Layered model makes of the reference image (-r): "
                "N + 1 images, the composite first"),
        text("", "--ad-model", G, &CliParams::ad_model, "none",
             "detector model of the ADetailer pass", "ADetailer"),
        text("", "--ad-prompt", G, &CliParams::ad_prompt, "the prompt",
             "prompt of the ADetailer pass", "ADetailer"),
        text("", "--ad-negative-prompt", G, &CliParams::ad_negative_prompt, "the negative prompt",
             "negative prompt of the ADetailer pass", "ADetailer"),
        text("", "--extra-ad-args", G, &CliParams::extra_ad_args, "none",
             "key=value options of the ADetailer pass", "ADetailer"),
    };
}

std::vector<OptionSpec> size_and_batch_options() {
    const Group G = Group::Generation;
    return {
        integer(
            "-W", "--width", G, &CliParams::width, "512 (or the init image's)",
            "image width in pixels, rounded up to what the model takes (64 for SD 1.x/2.x/XL, 16 "
            "for SD3 and FLUX.2, 8 for FLUX.1, Chroma and Z-Image)"),
        integer(
            "-H", "--height", G, &CliParams::height, "512 (or the init image's)",
            "image height in pixels, rounded up to what the model takes (64 for SD 1.x/2.x/XL, 16 "
            "for SD3 and FLUX.2, 8 for FLUX.1, Chroma and Z-Image)"),
        int_field("", "--steps", G, "20", "number of sampling steps",
                  [](CliParams& p) -> int& { return p.sample_params.sample_steps; }),
        int_field("", "--high-noise-steps", G, "-1 (auto)", "(high noise) number of sampling steps",
                  [](CliParams& p) -> int& { return p.high_noise_sample_params.sample_steps; }),
        integer(
            "", "--clip-skip", G, &CliParams::clip_skip, "-1",
            "CLIP layers to skip from the end; <= 0: the model's own (1 for SD1.x, 2 for SD2.x)"),
        integer("-b", "--batch-count", G, &CliParams::batch_count, "1",
                "number of images to generate"),
        integer("", "--video-frames", G, &CliParams::video_frames, "1", "number of video frames"),
        integer("", "--fps", G, &CliParams::fps, "16", "frames per second of a video"),
        int_field("", "--timestep-shift", G, "0",
                  "shift timestep for NitroFusion models (0..1000; e.g. 250 for NitroSD-Realism)",
                  [](CliParams& p) -> int& { return p.sample_params.shifted_timestep; }),
        integer("", "--upscale-repeats", G, &CliParams::upscale_repeats, "1",
                "times to run the ESRGAN upscaler"),
        integer("", "--upscale-tile-size", G, &CliParams::upscale_tile_size, "128",
                "tile size of ESRGAN upscaling"),
        make("-s", "--seed", G, Arg::Int, "<int>", "42", "RNG seed; < 0 picks a random one",
             [](CliParams& p, const std::string& v) { p.seed = to_int64(v); }),
    };
}

std::vector<OptionSpec> guidance_options() {
    const Group G = Group::Generation;
    auto sample = [](CliParams& p) -> sd_sample_params_t& { return p.sample_params; };
    auto high = [](CliParams& p) -> sd_sample_params_t& { return p.high_noise_sample_params; };
    return {
        float_field("", "--cfg-scale", G, "7.0", "classifier-free guidance scale",
                    [=](CliParams& p) -> float& { return sample(p).guidance.txt_cfg; }),
        float_field("", "--img-cfg-scale", G, "same as --cfg-scale",
                    "image guidance scale (inpaint and instruct-pix2pix models)",
                    [=](CliParams& p) -> float& { return sample(p).guidance.img_cfg; }),
        float_field("", "--guidance", G, "3.5",
                    "distilled guidance scale (models with a guidance input)",
                    [=](CliParams& p) -> float& { return sample(p).guidance.distilled_guidance; }),
        float_field("", "--slg-scale", G, "0 (off)", "skip-layer guidance scale (DiT models)",
                    [=](CliParams& p) -> float& { return sample(p).guidance.slg.scale; }),
        float_field("", "--skip-layer-start", G, "0.01", "skip-layer guidance start point",
                    [=](CliParams& p) -> float& { return sample(p).guidance.slg.layer_start; }),
        float_field("", "--skip-layer-end", G, "0.2", "skip-layer guidance end point",
                    [=](CliParams& p) -> float& { return sample(p).guidance.slg.layer_end; }),
        float_field("", "--eta", G, "0, or 1 for ancestral samplers", "noise multiplier",
                    [=](CliParams& p) -> float& { return sample(p).eta; }),
        float_field("", "--flow-shift", G, "auto", "shift of flow models (SD3.x, Wan)",
                    [=](CliParams& p) -> float& { return sample(p).flow_shift; }),
        float_field("", "--high-noise-cfg-scale", G, "7.0", "(high noise) guidance scale",
                    [=](CliParams& p) -> float& { return high(p).guidance.txt_cfg; }),
        float_field("", "--high-noise-img-cfg-scale", G, "same as --high-noise-cfg-scale",
                    "(high noise) image guidance scale",
                    [=](CliParams& p) -> float& { return high(p).guidance.img_cfg; }),
        float_field("", "--high-noise-guidance", G, "3.5", "(high noise) distilled guidance scale",
                    [=](CliParams& p) -> float& { return high(p).guidance.distilled_guidance; }),
        float_field("", "--high-noise-slg-scale", G, "0 (off)",
                    "(high noise) skip-layer guidance scale",
                    [=](CliParams& p) -> float& { return high(p).guidance.slg.scale; }),
        float_field("", "--high-noise-skip-layer-start", G, "0.01",
                    "(high noise) skip-layer guidance start point",
                    [=](CliParams& p) -> float& { return high(p).guidance.slg.layer_start; }),
        float_field("", "--high-noise-skip-layer-end", G, "0.2",
                    "(high noise) skip-layer guidance end point",
                    [=](CliParams& p) -> float& { return high(p).guidance.slg.layer_end; }),
        float_field("", "--high-noise-eta", G, "0, or 1 for ancestral samplers",
                    "(high noise) noise multiplier",
                    [=](CliParams& p) -> float& { return high(p).eta; }),
        number("", "--strength", G, &CliParams::strength, "0.75",
               "img2img strength: 1.0 replaces all of the init image"),
        number("", "--pm-style-strength", G, &CliParams::pm_style_strength, "20",
               "PhotoMaker style strength"),
        number("", "--control-strength", G, &CliParams::control_strength, "0.9",
               "strength of the ControlNet"),
        number("", "--moe-boundary", G, &CliParams::moe_boundary, "0.875",
               "timestep boundary of the Wan2.2 MoE models (with --high-noise-steps -1)"),
        number("", "--vace-strength", G, &CliParams::vace_strength, "1.0", "Wan VACE strength"),
    };
}

std::vector<OptionSpec> sampler_options() {
    const Group G = Group::Generation;
    const std::vector<std::string> samplers = sampler_names();
    const std::vector<std::string> schedulers = scheduler_names();
    return {
        make("", "--sampling-method", G, Arg::Choice, choice_hint(samplers),
             "euler for Flux/SD3/Wan, euler_a otherwise", "sampling method",
             [samplers](CliParams& p, const std::string& v) {
                 p.sample_params.sample_method =
                     to_enum(v, str_to_sample_method, SAMPLE_METHOD_COUNT, samplers);
             }),
        make("", "--high-noise-sampling-method", G, Arg::Choice, choice_hint(samplers),
             "as --sampling-method", "(high noise) sampling method",
             [samplers](CliParams& p, const std::string& v) {
                 p.high_noise_sample_params.sample_method =
                     to_enum(v, str_to_sample_method, SAMPLE_METHOD_COUNT, samplers);
             }),
        make("", "--scheduler", G, Arg::Choice, choice_hint(schedulers),
             "the model's (discrete; flux for FLUX; lcm for the lcm sampler)", "sigma scheduler",
             [schedulers](CliParams& p, const std::string& v) {
                 p.sample_params.scheduler =
                     to_enum(v, str_to_scheduler, SCHEDULER_COUNT, schedulers);
             }),
        make("", "--sigmas", G, Arg::String, "<floats>", "from the scheduler",
             "custom sigmas, comma-separated (e.g. \"14.61,7.8,3.5,0.0\")",
             [](CliParams& p, const std::string& v) { p.custom_sigmas = to_floats(v); }),
        make("", "--skip-layers", G, Arg::String, "<layers>", "[7,8,9]",
             "layers skip-layer guidance skips",
             [](CliParams& p, const std::string& v) { p.skip_layers = to_layers(v); }),
        make("", "--high-noise-skip-layers", G, Arg::String, "<layers>", "[7,8,9]",
             "(high noise) layers skip-layer guidance skips",
             [](CliParams& p, const std::string& v) { p.high_noise_skip_layers = to_layers(v); }),
        text("", "--extra-sample-args", G, &CliParams::extra_sample_args, "none",
             "sampler / scheduler / guidance options key=value,..."),
        flag("", "--increase-ref-index", G, &CliParams::increase_ref_index, true,
             "number the reference images 1, 2, ... in the order given"),
        flag("", "--disable-auto-resize-ref-image", G, &CliParams::auto_resize_ref_image, false,
             "do not resize the reference images"),
        flag("", "--disable-image-metadata", G, &CliParams::embed_image_metadata, false,
             "do not embed the generation parameters in the image files"),
    };
}

std::vector<OptionSpec> tiling_and_cache_options() {
    const Group G = Group::Generation;
    const std::vector<std::string> cache_modes = {"easycache",  "ucache",    "dbcache",
                                                  "taylorseer", "cache-dit", "spectrum"};
    return {
        make("", "--vae-tiling", G, Arg::None, "", "off", "decode the VAE in tiles to save memory",
             [](CliParams& p, const std::string&) { p.vae_tiling_params.enabled = true; }),
        make("", "--vae-tile-size", G, Arg::String, "<XxY>", "32x32",
             "VAE tile size in latent pixels",
             [](CliParams& p, const std::string& v) {
                 to_pair(v, to_int, &p.vae_tiling_params.tile_size_x,
                         &p.vae_tiling_params.tile_size_y);
             }),
        make("", "--vae-relative-tile-size", G, Arg::String, "<XxY>", "none",
             "VAE tile size relative to the image (< 1) or tiles per side (>= 1); overrides "
             "--vae-tile-size",
             [](CliParams& p, const std::string& v) {
                 to_pair(v, to_float, &p.vae_tiling_params.rel_size_x,
                         &p.vae_tiling_params.rel_size_y);
             }),
        float_field("", "--vae-tile-overlap", G, "0.5",
                    "overlap of VAE tiles, a fraction of a tile",
                    [](CliParams& p) -> float& { return p.vae_tiling_params.target_overlap; }),
        make("", "--temporal-tiling", G, Arg::None, "", "off",
             "tile the video VAE over time (the Wan VAEs always decode a latent frame at a time)",
             [](CliParams& p, const std::string&) { p.vae_tiling_params.temporal_tiling = true; }),
        text("", "--extra-tiling-args", G, &CliParams::extra_tiling_args, "none",
             "VAE tiling options key=value,..."),
        make("", "--cache-mode", G, Arg::Choice, choice_hint(cache_modes), "none",
             "step caching: ucache (UNet), easycache / dbcache / taylorseer / cache-dit (DiT), "
             "spectrum (UNet and DiT)",
             [cache_modes](CliParams& p, const std::string& v) {
                 p.cache_mode = from_list(v, cache_modes);
             }),
        text("", "--cache-option", G, &CliParams::cache_option, "none",
             "cache parameters key=value,...: threshold, start, end, decay, relative, reset, Fn, "
             "Bn, "
             "warmup, w, m, lam, window, flex, stop"),
        text("", "--scm-mask", G, &CliParams::scm_mask, "none",
             "cache-dit step mask, comma-separated 0/1 (1: compute, 0: may cache)"),
        make("", "--scm-policy", G, Arg::Choice, "{dynamic, static}", "dynamic",
             "cache-dit SCM policy",
             [](CliParams& p, const std::string& v) {
                 p.scm_policy_dynamic = from_list(v, {"dynamic", "static"}) == "dynamic";
             }),
    };
}

std::vector<OptionSpec> hires_options() {
    const Group G = Group::Generation;
    return {
        flag("", "--hires", G, &CliParams::hires, true,
             "hires fix: sample small, upscale, denoise again"),
        text(
            "", "--hires-upscaler", G, &CliParams::hires_upscaler, "Latent",
            "hires upscaler: None, Latent, Latent (nearest), Latent (nearest-exact), Latent "
            "(antialiased), Latent (bicubic), Latent (bicubic antialiased), Lanczos, Nearest, or a "
            "model in --hires-upscalers-dir"),
        number("", "--hires-scale", G, &CliParams::hires_scale, "2.0",
               "hires scale factor (without --hires-width/--hires-height)"),
        integer("", "--hires-width", G, &CliParams::hires_width, "0 (from --hires-scale)",
                "hires target width"),
        integer("", "--hires-height", G, &CliParams::hires_height, "0 (from --hires-scale)",
                "hires target height"),
        integer("", "--hires-steps", G, &CliParams::hires_steps, "0 (same as --steps)",
                "sampling steps of the hires pass"),
        number("", "--hires-denoising-strength", G, &CliParams::hires_denoising_strength, "0.7",
               "denoising strength of the hires pass"),
        integer("", "--hires-upscale-tile-size", G, &CliParams::hires_upscale_tile_size, "128",
                "tile size of a model upscaler in the hires pass"),
        make("", "--hires-sigmas", G, Arg::String, "<floats>", "from the scheduler",
             "custom sigmas of the hires pass, comma-separated",
             [](CliParams& p, const std::string& v) { p.hires_custom_sigmas = to_floats(v); }),
    };
}

std::vector<OptionSpec> build_table() {
    std::vector<OptionSpec> table;
    for (auto part : {program_options, component_file_options, model_file_options, runtime_options,
                      input_options, size_and_batch_options, guidance_options, sampler_options,
                      tiling_and_cache_options, hires_options}) {
        for (OptionSpec& spec : part()) table.push_back(std::move(spec));
    }
    return table;
}

constexpr size_t kMaxHintWidth = 24;
constexpr size_t kMaxNamesWidth = 40;

// Long choice lists go to the help text instead of the names column.
bool long_hint(const OptionSpec& spec) {
    return spec.value_hint.size() > kMaxHintWidth;
}

// Splits "--name=value" of an option that takes a value.
bool split_inline_value(const std::string& arg, std::string* name, std::string* value) {
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") != 0 || eq == std::string::npos) return false;
    *name = arg.substr(0, eq);
    *value = arg.substr(eq + 1);
    const OptionSpec* spec = find_option(*name);
    return spec && spec->arg != Arg::None;
}

void apply_option(const OptionSpec& spec, const std::string& value, CliParams& params) {
    try {
        spec.apply(params, value);
    } catch (const BadValue& bad) {
        throw UsageError("invalid value '" + value + "' for " + option_label(spec) + ": " +
                         bad.reason);
    }
    params.given.insert(spec.long_name);
}

}  // namespace

const char* mode_name(Mode mode) {
    static const char* const names[] = {"img_gen", "vid_gen", "convert", "upscale", "metadata"};
    return names[static_cast<int>(mode)];
}

CliParams::CliParams() {
    sd_sample_params_init(&sample_params);
    sd_sample_params_init(&high_noise_sample_params);
    high_noise_sample_params.sample_steps = -1;
}

const std::vector<OptionSpec>& option_table() {
    static const std::vector<OptionSpec> table = build_table();
    return table;
}

const OptionSpec* find_option(const std::string& name) {
    for (const OptionSpec& spec : option_table())
        if (name == spec.long_name || (!spec.short_name.empty() && name == spec.short_name))
            return &spec;
    return nullptr;
}

std::string names_column(const OptionSpec& spec) {
    std::string s =
        spec.short_name.empty() ? spec.long_name : spec.short_name + ", " + spec.long_name;
    if (long_hint(spec))
        s += " <value>";
    else if (!spec.value_hint.empty())
        s += " " + spec.value_hint;
    return s;
}

std::string help_column(const OptionSpec& spec) {
    std::string s = spec.help;
    if (long_hint(spec)) s += ", one of " + spec.value_hint.substr(1, spec.value_hint.size() - 2);
    s += " (default: " + spec.default_text + ")";
    if (!spec.not_built.empty()) s += " [not built yet]";
    return s;
}

std::string option_label(const OptionSpec& spec) {
    return spec.short_name.empty() ? spec.long_name : spec.short_name + "/" + spec.long_name;
}

void parse_command_line(int argc, const char* const* argv, CliParams& params) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string name = arg, value;
        const bool inline_value = split_inline_value(arg, &name, &value);
        const OptionSpec* spec = find_option(name);
        if (!spec) throw UsageError("unknown argument: " + arg + " (sd-cli -h lists the options)");
        if (spec->arg != Arg::None && !inline_value) {
            if (i + 1 >= argc) throw UsageError(option_label(*spec) + " needs a value");
            value = argv[++i];
        }
        apply_option(*spec, value, params);
    }
}

void print_help(std::ostream& out, const std::string& program) {
    const std::vector<OptionSpec>& table = option_table();
    size_t names_width = 0;
    for (const OptionSpec& spec : table)
        if (names_column(spec).size() <= kMaxNamesWidth)
            names_width = std::max(names_width, names_column(spec).size());
    const size_t width = help_width();
    out << "usage: " << program << " [options]\n";
    const std::pair<Group, const char*> groups[] = {{Group::Cli, "CLI Options"},
                                                    {Group::Context, "Context Options"},
                                                    {Group::Generation, "Generation Options"}};
    for (const auto& [group, title] : groups) {
        out << "\n" << title << ":\n";
        for (const OptionSpec& spec : table)
            if (spec.group == group)
                print_help_row(out, names_column(spec), help_column(spec), names_width, width);
    }
}

}  // namespace cli
