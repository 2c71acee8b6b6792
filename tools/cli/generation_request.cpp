#include "generation_request.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <strings.h>

#include "cli_options.h"
#include "log_output.h"

namespace fs = std::filesystem;

namespace cli {
namespace {

// What a <lora:NAME> tag or an --embd-dir entry may be called (the reference takes .ckpt too).
const char* const kModelExtensions[] = {".gguf", ".safetensors", ".pt", ".ckpt"};

const char* c_str_or_null(const std::string& s) {
    return s.empty() ? nullptr : s.c_str();
}

std::string read_text_file(const std::string& path, const std::string& option) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(option + ": cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

// `name` as given, else with one of the model extensions appended; empty when none exists.
std::string existing_model_file(const fs::path& path) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return path.lexically_normal().string();
    for (const char* ext : kModelExtensions) {
        fs::path candidate = path;
        candidate += ext;
        if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
    }
    return "";
}

struct LoraTag {
    size_t begin = std::string::npos, end = 0;
    std::string name, weight;
};

// The first <lora:NAME:WEIGHT> at or after `from` (NAME without ':' or '>', WEIGHT without
// '>'), found without std::regex, whose recursion a long prompt could exhaust.
LoraTag find_lora_tag(const std::string& prompt, size_t from) {
    static const std::string open = "<lora:";
    for (size_t at = prompt.find(open, from); at != std::string::npos;
         at = prompt.find(open, at + 1)) {
        const size_t name_begin = at + open.size();
        const size_t name_end = prompt.find_first_of(":>", name_begin);
        if (name_end == std::string::npos || name_end == name_begin || prompt[name_end] != ':')
            continue;
        const size_t close = prompt.find('>', name_end + 1);
        if (close == std::string::npos || close == name_end + 1) continue;
        return {at, close + 1, prompt.substr(name_begin, name_end - name_begin),
                prompt.substr(name_end + 1, close - name_end - 1)};
    }
    return {};
}

// Takes the <lora:NAME:WEIGHT> tags out of the prompt and finds their files; a tag naming
// no file is an error (the reference program only warns and runs without it).
void extract_loras(const std::string& lora_dir, GenerationRequest& r) {
    std::map<std::string, float> normal, high_noise;
    for (const PromptLora& tag : take_lora_tags(r.prompt)) {
        const fs::path path =
            fs::path(tag.name).is_absolute() ? fs::path(tag.name) : fs::path(lora_dir) / tag.name;
        const std::string file = existing_model_file(path);
        if (file.empty())
            throw UsageError("LoRA '" + tag.name + "' of the prompt not found (looked for " +
                             path.string() + " with .gguf/.safetensors/.pt in --lora-model-dir)");
        (tag.high_noise ? high_noise : normal)[file] += tag.multiplier;
    }
    for (const auto& [path, mult] : normal) r.loras.push_back({path, mult, false});
    for (const auto& [path, mult] : high_noise) r.loras.push_back({path, mult, true});
}

std::map<std::string, std::string> find_embeddings(const std::string& dir) {
    std::map<std::string, std::string> found;
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec)) {
        if (!dir.empty()) throw UsageError("--embd-dir: '" + dir + "' is not a folder");
        return found;
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file()) continue;
        const std::string ext = entry.path().extension().string();
        for (const char* known : kModelExtensions)
            if (ext == known) found[entry.path().stem().string()] = entry.path().string();
    }
    return found;
}

float to_number(const std::string& key, const std::string& value) {
    char* end = nullptr;
    const float v = std::strtof(value.c_str(), &end);
    if (value.empty() || *end != '\0')
        throw UsageError("invalid value '" + value + "' for '" + key + "' in --cache-option");
    return v;
}

void apply_cache_option(const std::string& mode, const std::string& key, const std::string& value,
                        sd_cache_params_t& c) {
    const float v = to_number(key, value);
    const bool step_cache = mode == "easycache" || mode == "ucache";
    if (key == "threshold") {
        (step_cache ? c.reuse_threshold : c.residual_diff_threshold) = v;
    } else if (key == "start") {
        c.start_percent = v;
    } else if (key == "end") {
        c.end_percent = v;
    } else if (key == "decay") {
        c.error_decay_rate = v;
    } else if (key == "relative") {
        c.use_relative_threshold = v != 0;
    } else if (key == "reset") {
        c.reset_error_on_compute = v != 0;
    } else if (key == "Fn" || key == "fn") {
        c.Fn_compute_blocks = static_cast<int>(v);
    } else if (key == "Bn" || key == "bn") {
        c.Bn_compute_blocks = static_cast<int>(v);
    } else if (key == "warmup") {
        (mode == "spectrum" ? c.spectrum_warmup_steps : c.max_warmup_steps) = static_cast<int>(v);
    } else if (key == "w") {
        c.spectrum_w = v;
    } else if (key == "m") {
        c.spectrum_m = static_cast<int>(v);
    } else if (key == "lam") {
        c.spectrum_lam = v;
    } else if (key == "window") {
        c.spectrum_window_size = static_cast<int>(v);
    } else if (key == "flex") {
        c.spectrum_flex_window = v;
    } else if (key == "stop") {
        c.spectrum_stop_percent = v;
    } else {
        throw UsageError("--cache-option: unknown parameter '" + key + "'");
    }
}

sd_cache_mode_t cache_mode_of(const std::string& mode) {
    if (mode == "easycache") return SD_CACHE_EASYCACHE;
    if (mode == "ucache") return SD_CACHE_UCACHE;
    if (mode == "dbcache") return SD_CACHE_DBCACHE;
    if (mode == "taylorseer") return SD_CACHE_TAYLORSEER;
    if (mode == "cache-dit") return SD_CACHE_CACHE_DIT;
    if (mode == "spectrum") return SD_CACHE_SPECTRUM;
    return SD_CACHE_DISABLED;
}

void check_cache_ranges(const std::string& mode, const sd_cache_params_t& c) {
    if (mode != "easycache" && mode != "ucache") return;
    if (c.reuse_threshold < 0) throw UsageError("--cache-option: threshold must not be negative");
    if (c.start_percent < 0 || c.start_percent >= 1 || c.end_percent <= 0 || c.end_percent > 1 ||
        c.start_percent >= c.end_percent)
        throw UsageError("--cache-option: start and end must satisfy 0 <= start < end <= 1");
}

// The --hires-upscaler name, or a model of that name in --hires-upscalers-dir.
void resolve_hires_upscaler(const CliParams& p, GenerationRequest& r) {
    for (int i = 0; i < SD_HIRES_UPSCALER_COUNT; ++i) {
        const auto u = static_cast<sd_hires_upscaler_t>(i);
        if (u != SD_HIRES_UPSCALER_MODEL &&
            strcasecmp(p.hires_upscaler.c_str(), sd_hires_upscaler_name(u)) == 0) {
            r.hires_upscaler = u;
            return;
        }
    }
    std::string file;
    if (!p.hires_upscalers_dir.empty())
        file = existing_model_file(fs::path(p.hires_upscalers_dir) / p.hires_upscaler);
    if (file.empty()) {
        for (const char* ext : {".pth", ".bin"}) {
            fs::path candidate = fs::path(p.hires_upscalers_dir) / (p.hires_upscaler + ext);
            std::error_code ec;
            if (!p.hires_upscalers_dir.empty() && fs::is_regular_file(candidate, ec))
                file = candidate.string();
        }
    }
    if (file.empty())
        throw UsageError("invalid value '" + p.hires_upscaler +
                         "' for --hires-upscaler: not a built-in upscaler nor a model in "
                         "--hires-upscalers-dir");
    r.hires_upscaler = SD_HIRES_UPSCALER_MODEL;
    r.hires_model_path = file;
}

sd_sample_params_t sample_view(sd_sample_params_t s, std::vector<int>& layers,
                               std::vector<float>* sigmas, const std::string& extra) {
    s.guidance.slg.layers = layers.empty() ? nullptr : layers.data();
    s.guidance.slg.layer_count = layers.size();
    if (sigmas) {
        s.custom_sigmas = sigmas->empty() ? nullptr : sigmas->data();
        s.custom_sigmas_count = static_cast<int>(sigmas->size());
    }
    s.extra_sample_args = c_str_or_null(extra);
    return s;
}

std::vector<sd_image_t> views_of(std::vector<sd::image::Image>& images) {
    std::vector<sd_image_t> views;
    for (sd::image::Image& image : images) views.push_back(image_view(image));
    return views;
}

void fill_generation_views(const CliParams& p, GenerationRequest& r) {
    r.lora_views.clear();
    for (const LoraEntry& l : r.loras)
        r.lora_views.push_back({l.high_noise, l.multiplier, l.path.c_str()});
    r.ref_views = views_of(r.ref_images);
    r.frame_views = views_of(r.control_frames);
    r.pm_views = views_of(r.pm_id_images);
    r.skip_layers = p.skip_layers;
    r.high_noise_skip_layers = p.high_noise_skip_layers;
    r.custom_sigmas = p.custom_sigmas;
    r.hires_sigmas = p.hires_custom_sigmas;
    r.cache.scm_mask = c_str_or_null(p.scm_mask);
}

sd_hires_params_t hires_view(const CliParams& p, GenerationRequest& r) {
    sd_hires_params_t h;
    sd_hires_params_init(&h);
    h.enabled = p.hires;
    h.upscaler = r.hires_upscaler;
    h.model_path = c_str_or_null(r.hires_model_path);
    h.scale = p.hires_scale;
    h.target_width = p.hires_width;
    h.target_height = p.hires_height;
    h.steps = p.hires_steps;
    h.denoising_strength = p.hires_denoising_strength;
    h.upscale_tile_size = p.hires_upscale_tile_size;
    h.custom_sigmas = r.hires_sigmas.empty() ? nullptr : r.hires_sigmas.data();
    h.custom_sigmas_count = static_cast<int>(r.hires_sigmas.size());
    return h;
}

sd_tiling_params_t tiling_view(const CliParams& p) {
    sd_tiling_params_t t = p.vae_tiling_params;
    t.extra_tiling_args = c_str_or_null(p.extra_tiling_args);
    return t;
}

}  // namespace

sd_image_t image_view(sd::image::Image& image, uint32_t channels) {
    if (image.empty()) return {0, 0, channels, nullptr};
    return {image.width, image.height, image.channels, image.pixels.data()};
}

sd_cache_params_t make_cache_params(const CliParams& p) {
    sd_cache_params_t c;
    sd_cache_params_init(&c);
    c.mode = cache_mode_of(p.cache_mode);
    std::stringstream options(p.cache_option);
    std::string item;
    while (std::getline(options, item, ',')) {
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw UsageError("--cache-option: '" + item + "' is not key=value");
        apply_cache_option(p.cache_mode, item.substr(0, eq), item.substr(eq + 1), c);
    }
    check_cache_ranges(p.cache_mode, c);
    if (c.mode == SD_CACHE_DBCACHE || c.mode == SD_CACHE_TAYLORSEER || c.mode == SD_CACHE_CACHE_DIT)
        c.scm_policy_dynamic = p.scm_policy_dynamic;
    return c;
}

std::vector<PromptLora> take_lora_tags(std::string& prompt) {
    std::vector<PromptLora> out;
    for (LoraTag tag = find_lora_tag(prompt, 0); tag.begin != std::string::npos;
         tag = find_lora_tag(prompt, tag.begin)) {
        prompt.erase(tag.begin, tag.end - tag.begin);
        char* end = nullptr;
        const float multiplier = std::strtof(tag.weight.c_str(), &end);
        if (end == tag.weight.c_str()) {
            log_warn("ignoring <lora:%s:%s>: the weight is not a number", tag.name.c_str(),
                     tag.weight.c_str());
            continue;
        }
        const std::string high_prefix = "|high_noise|";
        const bool is_high = tag.name.rfind(high_prefix, 0) == 0;
        if (is_high) tag.name.erase(0, high_prefix.size());
        out.push_back({tag.name, multiplier, is_high});
    }
    return out;
}

void check_prompt_text(const std::string& text, const char* what, int max_tokens) {
    char why[512];
    if (!sd_check_prompt_text(text.data(), text.size(), max_tokens, what, why, sizeof why))
        throw UsageError(why);
}

GenerationRequest resolve_request(const CliParams& p) {
    GenerationRequest r;
    r.prompt = p.prompt_file.empty() ? p.prompt : read_text_file(p.prompt_file, "--prompt-file");
    r.negative_prompt = p.negative_prompt_file.empty()
                            ? p.negative_prompt
                            : read_text_file(p.negative_prompt_file, "--negative-prompt-file");
    check_prompt_text(r.prompt, "prompt", p.max_prompt_tokens);
    check_prompt_text(r.negative_prompt, "negative prompt", p.max_prompt_tokens);
    r.prompt_with_lora = r.prompt;
    if (!p.lora_model_dir.empty()) extract_loras(p.lora_model_dir, r);
    r.embeddings = find_embeddings(p.embedding_dir);
    r.seed = p.seed;
    sd_img_gen_params_t defaults;  // the library's size where none is given
    sd_img_gen_params_init(&defaults);
    r.width = p.width > 0 ? p.width : defaults.width;
    r.height = p.height > 0 ? p.height : defaults.height;
    r.cache = make_cache_params(p);
    if (p.hires) resolve_hires_upscaler(p, r);
    return r;
}

namespace {

void append_item(std::string& list, const std::string& item) {
    if (!list.empty()) list += ",";
    list += item;
}

}  // namespace

std::string backend_spec(const CliParams& p) {
    std::string spec = p.backend;
    if (p.clip_on_cpu) append_item(spec, "te=cpu");
    if (p.vae_on_cpu) append_item(spec, "vae=cpu");
    if (p.control_net_cpu) append_item(spec, "controlnet=cpu");
    return spec;
}

std::string params_backend_spec(const CliParams& p) {
    if (p.params_backend.empty() && p.offload_to_cpu) return "*=cpu";
    return p.params_backend;  // an explicit placement wins over --offload-to-cpu
}

std::string ref_image_args_spec(const CliParams& p) {
    std::string spec = p.ref_image_args;
    if (p.increase_ref_index) append_item(spec, "ref_index_mode=increase");
    if (!p.auto_resize_ref_image) append_item(spec, "resize_before_vae=false");
    return spec;
}

sd_ctx_params_t make_ctx_params(const CliParams& p, GenerationRequest& r) {
    r.embedding_views.clear();
    for (const auto& [name, path] : r.embeddings)
        r.embedding_views.push_back({name.c_str(), path.c_str()});
    sd_ctx_params_t c;
    sd_ctx_params_init(&c);
    c.model_path = c_str_or_null(p.model_path);
    c.clip_l_path = c_str_or_null(p.clip_l_path);
    c.clip_g_path = c_str_or_null(p.clip_g_path);
    c.clip_vision_path = c_str_or_null(p.clip_vision_path);
    c.t5xxl_path = c_str_or_null(p.t5xxl_path);
    c.llm_path = c_str_or_null(p.llm_path);
    c.llm_vision_path = c_str_or_null(p.llm_vision_path);
    c.diffusion_model_path = c_str_or_null(p.diffusion_model_path);
    c.high_noise_diffusion_model_path = c_str_or_null(p.high_noise_diffusion_model_path);
    c.uncond_diffusion_model_path = c_str_or_null(p.uncond_diffusion_model_path);
    c.embeddings_connectors_path = c_str_or_null(p.embeddings_connectors_path);
    c.vae_path = c_str_or_null(p.vae_path);
    c.audio_vae_path = c_str_or_null(p.audio_vae_path);
    c.taesd_path = c_str_or_null(p.taesd_path);
    c.control_net_path = c_str_or_null(p.control_net_path);
    c.ip_adapter_path = c_str_or_null(p.ip_adapter_path);
    c.motion_module_path = c_str_or_null(p.motion_module_path);
    c.pulid_weights_path = c_str_or_null(p.pulid_weights_path);
    c.embeddings = r.embedding_views.empty() ? nullptr : r.embedding_views.data();
    c.embedding_count = static_cast<uint32_t>(r.embedding_views.size());
    c.photo_maker_path = c_str_or_null(p.photo_maker_path);
    c.tensor_type_rules = c_str_or_null(p.tensor_type_rules);
    c.n_threads = p.n_threads > 0 ? p.n_threads : sd_get_num_physical_cores();
    c.wtype = p.wtype;
    c.rng_type = p.rng_type;
    c.sampler_rng_type = p.sampler_rng_type;
    c.prediction = p.prediction;
    c.lora_apply_mode = p.lora_apply_mode;
    c.enable_mmap = p.enable_mmap;
    c.flash_attn = p.flash_attn;
    c.diffusion_flash_attn = p.diffusion_flash_attn;
    c.tae_preview_only = p.taesd_preview_only;
    c.diffusion_conv_direct = p.diffusion_conv_direct;
    c.vae_conv_direct = p.vae_conv_direct;
    c.force_sdxl_vae_conv_scale = p.force_sdxl_vae_conv_scale;
    c.vae_format = p.vae_format;
    c.max_vram = c_str_or_null(p.max_vram);
    c.stream_layers = p.stream_layers;
    c.eager_load = p.eager_load;
    c.auto_fit = p.auto_fit;
    r.backend = backend_spec(p);
    r.params_backend = params_backend_spec(p);
    c.backend = c_str_or_null(r.backend);
    c.params_backend = c_str_or_null(r.params_backend);
    c.split_mode = c_str_or_null(p.split_mode);
    c.model_args = c_str_or_null(p.model_args);
    return c;
}

sd_ctx_ext_params_t make_ctx_ext_params(const CliParams& p) {
    sd_ctx_ext_params_t e;
    sd_ctx_ext_params_init(&e);
    e.tokenizer_dir = c_str_or_null(p.tokenizer_dir);
    e.compute_type = p.compute_type;
    e.max_prompt_tokens = p.max_prompt_tokens;
    return e;
}

sd_img_gen_params_t make_img_gen_params(const CliParams& p, GenerationRequest& r) {
    fill_generation_views(p, r);
    sd_img_gen_params_t g;
    sd_img_gen_params_init(&g);
    g.loras = r.lora_views.empty() ? nullptr : r.lora_views.data();
    g.lora_count = static_cast<uint32_t>(r.lora_views.size());
    g.prompt = r.prompt.c_str();
    g.negative_prompt = r.negative_prompt.c_str();
    g.clip_skip = p.clip_skip;
    g.init_image = image_view(r.init_image);
    g.ref_images = r.ref_views.empty() ? nullptr : r.ref_views.data();
    g.ref_images_count = static_cast<int>(r.ref_views.size());
    r.ref_image_args = ref_image_args_spec(p);
    g.ref_image_args = r.ref_image_args.c_str();
    g.mask_image = image_view(r.mask_image, 1);
    g.width = r.width;
    g.height = r.height;
    g.sample_params =
        sample_view(p.sample_params, r.skip_layers, &r.custom_sigmas, p.extra_sample_args);
    g.strength = p.strength;
    g.seed = r.seed;
    g.batch_count = p.batch_count;
    g.control_image = image_view(r.control_image);
    g.control_strength = p.control_strength;
    g.qwen_image_layers = p.qwen_image_layers;
    g.ip_adapter_strength = p.ip_adapter_strength;
    g.circular_x = p.circular || p.circular_x;
    g.circular_y = p.circular || p.circular_y;
    g.pm_params = {r.pm_views.empty() ? nullptr : r.pm_views.data(),
                   static_cast<int>(r.pm_views.size()), c_str_or_null(p.pm_id_embed_path),
                   p.pm_style_strength};
    g.pulid_params = {c_str_or_null(p.pulid_id_embedding), p.pulid_id_weight};
    g.vae_tiling_params = tiling_view(p);
    g.cache = r.cache;
    g.hires = hires_view(p, r);
    return g;
}

sd_vid_gen_params_t make_vid_gen_params(const CliParams& p, GenerationRequest& r) {
    fill_generation_views(p, r);
    sd_vid_gen_params_t v;
    sd_vid_gen_params_init(&v);
    v.loras = r.lora_views.empty() ? nullptr : r.lora_views.data();
    v.lora_count = static_cast<uint32_t>(r.lora_views.size());
    v.prompt = r.prompt.c_str();
    v.negative_prompt = r.negative_prompt.c_str();
    v.clip_skip = p.clip_skip;
    v.init_image = image_view(r.init_image);
    v.end_image = image_view(r.end_image);
    v.control_frames = r.frame_views.empty() ? nullptr : r.frame_views.data();
    v.control_frames_size = static_cast<int>(r.frame_views.size());
    v.width = r.width;
    v.height = r.height;
    v.sample_params =
        sample_view(p.sample_params, r.skip_layers, &r.custom_sigmas, p.extra_sample_args);
    v.high_noise_sample_params = sample_view(p.high_noise_sample_params, r.high_noise_skip_layers,
                                             nullptr, p.extra_sample_args);
    v.moe_boundary = p.moe_boundary;
    v.strength = p.strength;
    v.seed = r.seed;
    v.video_frames = p.video_frames;
    v.fps = p.fps;
    v.vace_strength = p.vace_strength;
    v.vae_tiling_params = tiling_view(p);
    v.cache = r.cache;
    v.hires = hires_view(p, r);
    v.circular_x = p.circular || p.circular_x;
    v.circular_y = p.circular || p.circular_y;
    return v;
}

namespace {

// The settled sampling into the options; the pointers (layers, sigmas, extra args) stay ours.
void report_sampling(const sd_sample_params_t& settled, sd_sample_params_t& s) {
    s.sample_method = settled.sample_method;
    s.scheduler = settled.scheduler;
    s.sample_steps = settled.sample_steps;
    s.flow_shift = settled.flow_shift;
}

}  // namespace

void report_settled(const sd_img_gen_params_t& settled, CliParams& p, GenerationRequest& r) {
    r.seed = settled.seed;
    r.width = settled.width;
    r.height = settled.height;
    report_sampling(settled.sample_params, p.sample_params);
    if (settled.hires.enabled) {
        p.hires_width = settled.hires.target_width;
        p.hires_height = settled.hires.target_height;
    }
}

void report_settled(const sd_vid_gen_params_t& settled, CliParams& p, GenerationRequest& r) {
    r.seed = settled.seed;
    r.width = settled.width;
    r.height = settled.height;
    report_sampling(settled.sample_params, p.sample_params);
    p.high_noise_sample_params.sample_method = settled.high_noise_sample_params.sample_method;
}

}  // namespace cli
