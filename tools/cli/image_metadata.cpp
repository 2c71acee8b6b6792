#include "image_metadata.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include <nlohmann/json.hpp>

namespace cli {
namespace {

using json = nlohmann::json;

json finite_or_null(float v) {
    return std::isfinite(v) ? json(static_cast<double>(v)) : json(nullptr);
}

std::string sigma_list(const std::vector<float>& sigmas) {
    std::string out;
    for (size_t i = 0; i < sigmas.size(); ++i) {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.4f", static_cast<double>(sigmas[i]));
        out += buffer;
        if (i + 1 < sigmas.size()) out += ", ";
    }
    return out;
}

std::string guidance_text(const CliParams& p) {
    const sd_guidance_params_t& g = p.sample_params.guidance;
    std::string s = "CFG scale: " + std::to_string(g.txt_cfg) + ", ";
    if (g.slg.scale != 0 && !p.skip_layers.empty()) {
        s += "SLG scale: " + std::to_string(g.slg.scale) + ", Skip layers: [";
        for (int layer : p.skip_layers) s += std::to_string(layer) + ", ";
        s += "], Skip layer start: " + std::to_string(g.slg.layer_start) +
             ", Skip layer end: " + std::to_string(g.slg.layer_end) + ", ";
    }
    return s + "Guidance: " + std::to_string(g.distilled_guidance) + ", ";
}

std::string sampler_text(const CliParams& p) {
    std::string s = "Sampler: " + std::string(sd_sample_method_name(p.sample_params.sample_method));
    if (!p.custom_sigmas.empty())
        s += ", Custom Sigmas: [" + sigma_list(p.custom_sigmas) + "]";
    else if (p.sample_params.scheduler != SCHEDULER_COUNT)
        s += " " + std::string(sd_scheduler_name(p.sample_params.scheduler));
    return s + ", ";
}

std::string component_text(const CliParams& p) {
    std::string s;
    for (const std::string* te :
         {&p.clip_l_path, &p.clip_g_path, &p.t5xxl_path, &p.llm_path, &p.llm_vision_path})
        if (!te->empty()) s += "TE: " + base_name(*te) + ", ";
    if (!p.diffusion_model_path.empty()) s += "Unet: " + base_name(p.diffusion_model_path) + ", ";
    if (!p.vae_path.empty()) s += "VAE: " + base_name(p.vae_path) + ", ";
    if (p.clip_skip != -1) s += "Clip skip: " + std::to_string(p.clip_skip) + ", ";
    return s;
}

std::string hires_text(const CliParams& p, const GenerationRequest& r) {
    if (!p.hires) return "";
    std::string upscaler = r.hires_upscaler == SD_HIRES_UPSCALER_MODEL
                               ? base_name(r.hires_model_path)
                               : sd_hires_upscaler_name(r.hires_upscaler);
    return "Hires upscale: " + std::to_string(p.hires_scale) + ", Hires upscaler: " + upscaler +
           ", Hires steps: " + std::to_string(p.hires_steps) +
           ", Denoising strength: " + std::to_string(p.hires_denoising_strength) + ", ";
}

json models_json(const CliParams& p) {
    json models = json::object();
    const std::pair<const char*, const std::string*> files[] = {
        {"model", &p.model_path},
        {"clip_l", &p.clip_l_path},
        {"clip_g", &p.clip_g_path},
        {"clip_vision", &p.clip_vision_path},
        {"t5xxl", &p.t5xxl_path},
        {"llm", &p.llm_path},
        {"llm_vision", &p.llm_vision_path},
        {"diffusion_model", &p.diffusion_model_path},
        {"high_noise_diffusion_model", &p.high_noise_diffusion_model_path},
        {"vae", &p.vae_path},
        {"taesd", &p.taesd_path},
        {"control_net", &p.control_net_path},
        {"photo_maker", &p.photo_maker_path},
    };
    for (const auto& [key, path] : files)
        if (!path->empty()) models[key] = base_name(*path);
    return models;
}

json sampling_json(const CliParams& p) {
    const sd_sample_params_t& s = p.sample_params;
    json custom = json::array();
    for (float sigma : p.custom_sigmas) custom.push_back(static_cast<double>(sigma));
    json sampling = {
        {"custom_sigmas", custom},
        {"eta", finite_or_null(s.eta)},
        {"extra_sample_args", p.extra_sample_args},
        {"flow_shift", finite_or_null(s.flow_shift)},
        {"guidance",
         {{"distilled_guidance", static_cast<double>(s.guidance.distilled_guidance)},
          {"img_cfg", finite_or_null(s.guidance.img_cfg)},
          {"slg",
           {{"end", static_cast<double>(s.guidance.slg.layer_end)},
            {"layers", p.skip_layers},
            {"scale", static_cast<double>(s.guidance.slg.scale)},
            {"start", static_cast<double>(s.guidance.slg.layer_start)}}},
          {"txt_cfg", static_cast<double>(s.guidance.txt_cfg)}}},
        {"shifted_timestep", s.shifted_timestep},
        {"steps", s.sample_steps},
    };
    if (s.sample_method != SAMPLE_METHOD_COUNT)
        sampling["method"] = sd_sample_method_name(s.sample_method);
    if (s.scheduler != SCHEDULER_COUNT) sampling["scheduler"] = sd_scheduler_name(s.scheduler);
    return sampling;
}

void add_optional(const CliParams& p, const GenerationRequest& r, json& meta) {
    if (!r.loras.empty()) {
        json loras = json::array();
        for (const LoraEntry& l : r.loras)
            loras.push_back({{"is_high_noise", l.high_noise},
                             {"multiplier", static_cast<double>(l.multiplier)},
                             {"name", base_name(l.path)}});
        meta["loras"] = loras;
    }
    if (p.sampler_rng_type != RNG_TYPE_COUNT)
        meta["sampler_rng"] = sd_rng_type_name(p.sampler_rng_type);
    if (r.cache.mode != SD_CACHE_DISABLED)
        meta["cache"] = {{"mode", p.cache_mode}, {"option", p.cache_option}};
    if (p.hires)
        meta["hires"] = {{"denoising_strength", static_cast<double>(p.hires_denoising_strength)},
                         {"height", p.hires_height},
                         {"scale", static_cast<double>(p.hires_scale)},
                         {"steps", p.hires_steps},
                         {"upscaler", p.hires_upscaler},
                         {"width", p.hires_width}};
}

}  // namespace

std::string base_name(const std::string& path) {
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string sdcpp_metadata_json(const CliParams& p, const GenerationRequest& r, int64_t seed) {
    json meta = {
        {"auto_resize_ref_image", p.auto_resize_ref_image},
        {"clip_skip", p.clip_skip},
        {"control_strength", static_cast<double>(p.control_strength)},
        {"generator",
         {{"commit", sd_commit()}, {"name", "stable-diffusion.cpp"}, {"version", sd_version()}}},
        {"height", r.height},
        {"increase_ref_index", p.increase_ref_index},
        {"ip_adapter_strength", static_cast<double>(p.ip_adapter_strength)},
        {"mode", p.mode == Mode::VidGen ? "vid_gen" : "img_gen"},
        {"models", models_json(p)},
        {"prompt", {{"negative", r.negative_prompt}, {"positive", r.prompt}}},
        {"rng", sd_rng_type_name(p.rng_type)},
        {"sampling", sampling_json(p)},
        {"schema", "sdcpp.image.params/v1"},
        {"seed", seed},
        {"strength", static_cast<double>(p.strength)},
        {"width", r.width},
    };
    add_optional(p, r, meta);
    return meta.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string image_parameters(const CliParams& p, const GenerationRequest& r, int64_t seed) {
    std::string s = r.prompt_with_lora + "\n";
    if (!r.negative_prompt.empty()) s += "Negative prompt: " + r.negative_prompt + "\n";
    s += "Steps: " + std::to_string(p.sample_params.sample_steps) + ", ";
    s += guidance_text(p);
    s += "Eta: " + std::to_string(p.sample_params.eta) + ", ";
    s += "Seed: " + std::to_string(seed) + ", ";
    s += "Size: " + std::to_string(r.width) + "x" + std::to_string(r.height) + ", ";
    s += "Model: " + base_name(p.model_path) + ", ";
    s += "RNG: " + std::string(sd_rng_type_name(p.rng_type)) + ", ";
    if (p.sampler_rng_type != RNG_TYPE_COUNT)
        s += "Sampler RNG: " + std::string(sd_rng_type_name(p.sampler_rng_type)) + ", ";
    s += sampler_text(p);
    s += component_text(p);
    s += hires_text(p, r);
    s += "Version: stable-diffusion.cpp, SDCPP: " + sdcpp_metadata_json(p, r, seed);
    return s;
}

}  // namespace cli
