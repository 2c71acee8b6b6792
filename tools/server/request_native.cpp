// The native schema of /sdcpp/v1/img_gen (the reference server's api.md), which
// <sd_cpp_extra_args> blocks in the other APIs use too, and the fields /sdcpp/v1/vid_gen shares
// with it (request_native_video.cpp).
#include <cmath>
#include <vector>

#include "cli_options.h"
#include "extra_args.h"
#include "image_payload.h"
#include "request_common.h"
#include "request_error.h"
#include "requests.h"

namespace server {
namespace {

using nlohmann::json;

float to_float(double v) {
    return static_cast<float>(v);
}

// Features the command-line table marks as not built are refused as such.
void refuse_unbuilt(const FieldReader& f, const std::string& key, const char* cli_option) {
    if (!f.has(key)) return;
    const cli::OptionSpec* spec = cli::find_option(cli_option);
    if (spec && !spec->not_built.empty())
        throw bad_field(f.name(key), spec->not_built + " is not built in this engine yet");
}

// img_gen's images besides init_image (a shared field).
void read_images(const FieldReader& f, RequestInputs& in) {
    if (auto v = f.string("mask_image"))
        in.mask_image = decode_image_text(*v, 1, f.name("mask_image"));
    if (auto v = f.string("control_image"))
        in.control_image = decode_image_text(*v, 3, f.name("control_image"));
    refuse_unbuilt(f, "ip_adapter_image", "--ip-adapter-image");
    if (auto list = f.strings("ref_images")) {
        for (size_t i = 0; i < list->size(); ++i)
            in.ref_images.push_back(decode_image_text(
                (*list)[i], 3, f.name("ref_images") + "[" + std::to_string(i) + "]"));
    }
}

void read_guidance(const FieldReader& g, sd_guidance_params_t& out, std::vector<int>& layers) {
    if (auto v = g.number("txt_cfg", 0, 100)) out.txt_cfg = to_float(*v);
    if (auto v = g.number("img_cfg", 0, 100)) out.img_cfg = to_float(*v);
    if (auto v = g.number("distilled_guidance", 0, 100)) out.distilled_guidance = to_float(*v);
    if (auto slg = g.object("slg")) {
        if (auto v = slg->integers("layers", 0, 1000)) layers = *v;
        if (auto v = slg->number("layer_start", 0, 1)) out.slg.layer_start = to_float(*v);
        if (auto v = slg->number("layer_end", 0, 1)) out.slg.layer_end = to_float(*v);
        if (auto v = slg->number("scale", 0, 100)) out.slg.scale = to_float(*v);
    }
}

void read_hires(const FieldReader& h, const ServerLimits& limits, cli::CliParams& p) {
    if (auto v = h.boolean("enabled")) p.hires = *v;
    if (auto v = h.string("upscaler")) p.hires_upscaler = *v;
    if (auto v = h.number("scale", 0.01, 8)) p.hires_scale = to_float(*v);
    for (const auto& [key, field] :
         {std::pair{"target_width", &p.hires_width}, std::pair{"target_height", &p.hires_height}}) {
        if (auto v = h.integer(key, 0, limits.max_side)) {
            if (*v != 0) check_image_side(*v, h.name(key), limits);
            *field = *v;
        }
    }
    if (auto v = h.integer("steps", 0, limits.max_steps)) p.hires_steps = *v;
    if (auto v = h.number("denoising_strength", 0, 1)) p.hires_denoising_strength = to_float(*v);
    if (auto v = h.numbers("custom_sigmas", 0, 1e6)) {
        p.hires_custom_sigmas.clear();
        for (double d : *v) p.hires_custom_sigmas.push_back(to_float(d));
    }
    if (auto v = h.integer("upscale_tile_size", 32, 4096)) p.hires_upscale_tile_size = *v;
}

void read_tiling(const FieldReader& t, cli::CliParams& p) {
    sd_tiling_params_t& tp = p.vae_tiling_params;
    if (auto v = t.boolean("enabled")) tp.enabled = *v;
    if (auto v = t.boolean("temporal_tiling")) tp.temporal_tiling = *v;
    if (auto v = t.integer("tile_size_x", 0, 4096)) tp.tile_size_x = *v;
    if (auto v = t.integer("tile_size_y", 0, 4096)) tp.tile_size_y = *v;
    if (auto v = t.number("target_overlap", 0, 0.99)) tp.target_overlap = to_float(*v);
    if (auto v = t.number("rel_size_x", 0, 64)) tp.rel_size_x = to_float(*v);
    if (auto v = t.number("rel_size_y", 0, 64)) tp.rel_size_y = to_float(*v);
    if (auto v = t.string("extra_tiling_args")) p.extra_tiling_args = *v;
}

void read_cache(const FieldReader& f, cli::CliParams& p) {
    static const char* const kModes[] = {"easycache",  "ucache",    "dbcache",
                                         "taylorseer", "cache-dit", "spectrum"};
    if (auto v = f.string("cache_mode")) {
        if (v->empty() || *v == "disabled") {
            p.cache_mode.clear();
        } else {
            bool known = false;
            for (const char* m : kModes) known = known || *v == m;
            if (!known)
                throw bad_field(f.name("cache_mode"),
                                "expected disabled, easycache, ucache, dbcache, taylorseer, "
                                "cache-dit or spectrum");
            p.cache_mode = *v;
        }
    }
    if (auto v = f.string("cache_option")) p.cache_option = *v;
    if (auto v = f.string("scm_mask")) p.scm_mask = *v;
    if (auto v = f.boolean("scm_policy_dynamic")) p.scm_policy_dynamic = *v;
    try {
        cli::make_cache_params(p);
    } catch (const cli::UsageError& e) {
        throw bad_field(f.name("cache_option"), e.what());
    }
}

// The native schema's keys (what apply_native_fields reads), by object; a key that holds an
// object names its own list.
struct KnownKeys {
    const char* object;  // "" for the top level
    std::vector<const char*> keys;
};

const std::vector<KnownKeys>& native_schema() {
    static const std::vector<KnownKeys> schema = {
        {"",
         {"prompt",
          "negative_prompt",
          "clip_skip",
          "width",
          "height",
          "strength",
          "seed",
          "batch_count",
          "auto_resize_ref_image",
          "increase_ref_index",
          "ref_image_args",
          "control_strength",
          "ip_adapter_strength",
          "qwen_image_layers",
          "embed_image_metadata",
          "init_image",
          "mask_image",
          "control_image",
          "ip_adapter_image",
          "ref_images",
          "sample_params",
          "lora",
          "hires",
          "vae_tiling_params",
          "cache_mode",
          "cache_option",
          "scm_mask",
          "scm_policy_dynamic",
          "output_format",
          "output_compression"}},
        {"sample_params",
         {"scheduler", "sample_method", "sample_steps", "eta", "shifted_timestep", "custom_sigmas",
          "flow_shift", "guidance"}},
        {"guidance", {"txt_cfg", "img_cfg", "distilled_guidance", "slg"}},
        {"slg", {"layers", "layer_start", "layer_end", "scale"}},
        {"hires",
         {"enabled", "upscaler", "scale", "target_width", "target_height", "steps",
          "denoising_strength", "custom_sigmas", "upscale_tile_size"}},
        {"vae_tiling_params",
         {"enabled", "temporal_tiling", "tile_size_x", "tile_size_y", "target_overlap",
          "rel_size_x", "rel_size_y", "extra_tiling_args"}},
        {"lora", {"path", "multiplier", "is_high_noise"}},
    };
    return schema;
}

// A key the native schema does not have is refused naming it, not ignored.
void reject_unknown_keys(const json& object, const std::string& path, const char* kind) {
    const KnownKeys* known = nullptr;
    for (const KnownKeys& k : native_schema()) known = kind == std::string(k.object) ? &k : known;
    if (!known || !object.is_object()) return;
    for (const auto& [key, value] : object.items()) {
        const std::string name = path + "." + key;
        bool found = false;
        for (const char* k : known->keys) found = found || key == k;
        if (!found)
            throw bad_field(name,
                            "unknown key: <sd_cpp_extra_args> takes the native "
                            "/sdcpp/v1/img_gen schema (e.g. sample_params.sample_steps, "
                            "sample_params.guidance.txt_cfg)");
        if (value.is_object()) reject_unknown_keys(value, name, key.c_str());
        if (value.is_array() && key == "lora")
            for (size_t i = 0; i < value.size(); ++i)
                reject_unknown_keys(value[i], name + "[" + std::to_string(i) + "]", "lora");
    }
}

}  // namespace

void read_native_sample_params(const FieldReader& s, const ServerLimits& limits,
                               sd_sample_params_t& sp, std::vector<int>& skip_layers,
                               std::vector<float>* custom_sigmas, int min_steps) {
    const bool scheduler_given = s.has("scheduler");
    if (auto v = s.string("scheduler")) apply_scheduler_name(*v, s.name("scheduler"), sp);
    if (auto v = s.string("sample_method"))
        apply_sampler_name(*v, s.name("sample_method"), sp, scheduler_given);
    if (auto v = s.integer("sample_steps", min_steps, limits.max_steps)) sp.sample_steps = *v;
    if (auto v = s.number("eta", 0, 100)) sp.eta = to_float(*v);
    if (auto v = s.integer("shifted_timestep", 0, 1000)) sp.shifted_timestep = *v;
    if (s.has("custom_sigmas") && !custom_sigmas)
        throw bad_field(s.name("custom_sigmas"), "custom sigmas are sample_params' alone");
    if (auto v = s.numbers("custom_sigmas", 0, 1e6)) {
        custom_sigmas->clear();
        for (double d : *v) custom_sigmas->push_back(to_float(d));
    }
    if (auto v = s.number("flow_shift", -1000, 1000)) sp.flow_shift = to_float(*v);
    if (auto g = s.object("guidance")) read_guidance(*g, sp.guidance, skip_layers);
}

void apply_shared_native_fields(const FieldReader& f, const ParseContext& ctx, cli::CliParams& p,
                                RequestInputs& in, OutputOptions& out) {
    const ServerLimits& limits = ctx.limits;
    if (auto v = f.string("prompt")) p.prompt = *v;
    if (auto v = f.string("negative_prompt")) p.negative_prompt = *v;
    if (auto v = f.integer("clip_skip", -1, 24)) p.clip_skip = *v;
    if (auto v = read_image_side(f, "width", limits)) p.width = *v;
    if (auto v = read_image_side(f, "height", limits)) p.height = *v;
    if (auto v = f.number("strength", 0, 1)) p.strength = to_float(*v);
    if (auto v = f.int64("seed")) p.seed = *v;
    if (auto v = f.string("init_image")) {
        in.init_image = decode_image_text(*v, 3, f.name("init_image"));
        in.init_image_field = f.name("init_image");
    }
    if (auto s = f.object("sample_params"))
        read_native_sample_params(*s, limits, p.sample_params, p.skip_layers, &p.custom_sigmas, 1);
    if (f.has("lora")) in.loras = read_loras(f, "lora", ctx.defaults.lora_model_dir);
    if (auto t = f.object("vae_tiling_params")) read_tiling(*t, p);
    read_cache(f, p);
    if (auto v = f.integer("output_compression", 0, 100)) out.compression = *v;
}

void apply_native_fields(const FieldReader& f, const ParseContext& ctx, cli::CliParams& p,
                         RequestInputs& in, OutputOptions& out) {
    const ServerLimits& limits = ctx.limits;
    apply_shared_native_fields(f, ctx, p, in, out);
    if (auto v = f.integer("batch_count", 1, limits.max_batch)) p.batch_count = *v;
    if (auto v = f.boolean("auto_resize_ref_image")) p.auto_resize_ref_image = *v;
    if (auto v = f.boolean("increase_ref_index")) p.increase_ref_index = *v;
    if (auto v = f.string("ref_image_args")) p.ref_image_args = *v;
    if (auto v = f.number("control_strength", 0, 10)) p.control_strength = to_float(*v);
    if (auto v = f.number("ip_adapter_strength", 0, 10)) p.ip_adapter_strength = to_float(*v);
    if (auto v = f.integer("qwen_image_layers", 0, 64)) p.qwen_image_layers = *v;
    if (auto v = f.boolean("embed_image_metadata")) out.embed_metadata = *v;
    read_images(f, in);
    if (auto h = f.object("hires")) read_hires(*h, limits, p);
    if (auto v = f.string("output_format")) apply_output_format(*v, f.name("output_format"), out);
}

JobSpec parse_native_request(const json& body, const ParseContext& ctx) {
    const FieldReader fields(body);
    cli::CliParams p = ctx.defaults;
    RequestInputs inputs;
    OutputOptions output;
    apply_native_fields(fields, ctx, p, inputs, output);
    return finalize_request(std::move(p), std::move(inputs), output, ctx);
}

void apply_extra_args(std::string& prompt, const std::string& field, const ParseContext& ctx,
                      cli::CliParams& p, RequestInputs& inputs, OutputOptions& output) {
    ExtraArgs extra = extract_extra_args(prompt, field);
    prompt = extra.prompt;
    p.prompt = prompt;
    if (!extra.json_text) return;
    const json args = parse_json_object(*extra.json_text, "sd_cpp_extra_args");
    reject_unknown_keys(args, "sd_cpp_extra_args", "");
    apply_native_fields(FieldReader(args, "sd_cpp_extra_args"), ctx, p, inputs, output);
    prompt = p.prompt;
}

}  // namespace server
