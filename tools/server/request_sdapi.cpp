// The AUTOMATIC1111 webui API: POST /sdapi/v1/txt2img and /sdapi/v1/img2img with the
// webui's field names. Fields the webui has and this engine does not use (styles, subseed,
// restore_faces, scripts, ...) are accepted and ignored, so webui clients work unchanged.
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

// Types of the ignored fields are still checked, so a wrong one is a 400, not a surprise.
void check_ignored_fields(const FieldReader& f) {
    for (const char* key : {"styles"}) f.strings(key);
    for (const char* key : {"subseed", "seed_resize_from_h", "seed_resize_from_w"}) f.int64(key);
    for (const char* key : {"subseed_strength", "s_min_uncond", "s_churn", "s_tmax", "s_tmin",
                            "s_noise", "refiner_switch_at"})
        f.number(key, -1e9, 1e9);
    for (const char* key :
         {"restore_faces", "do_not_save_samples", "do_not_save_grid", "save_images",
          "override_settings_restore_afterwards", "disable_extra_networks"})
        f.boolean(key);
    for (const char* key : {"sampler_index", "script_name", "refiner_checkpoint", "force_task_id",
                            "infotext", "hr_checkpoint_name", "hr_sampler_name", "hr_scheduler",
                            "hr_prompt", "hr_negative_prompt"})
        f.string(key);
    for (const char* key : {"override_settings", "alwayson_scripts", "comments"}) f.object(key);
}

void read_override_settings(const FieldReader& f, cli::CliParams& p) {
    auto settings = f.object("override_settings");
    if (!settings) return;
    if (auto v = settings->integer("CLIP_stop_at_last_layers", 1, 12)) p.clip_skip = *v;
    settings->string("sd_model_checkpoint");  // one model per server; the name is not checked
}

void read_sampler(const FieldReader& f, cli::CliParams& p) {
    const bool scheduler_given = f.has("scheduler");
    if (auto v = f.string("scheduler")) apply_scheduler_name(*v, "scheduler", p.sample_params);
    if (auto v = f.string("sampler_name")) {
        apply_sampler_name(*v, "sampler_name", p.sample_params, scheduler_given);
    } else if (auto legacy = f.string("sampler_index")) {
        apply_sampler_name(*legacy, "sampler_index", p.sample_params, scheduler_given);
    }
}

void read_hires(const FieldReader& f, const ServerLimits& limits, cli::CliParams& p) {
    p.hires = f.boolean("enable_hr").value_or(false);
    if (auto v = f.number("hr_scale", 0.01, 8)) p.hires_scale = to_float(*v);
    if (auto v = f.string("hr_upscaler")) p.hires_upscaler = *v;
    if (auto v = f.integer("hr_second_pass_steps", 0, limits.max_steps)) p.hires_steps = *v;
    for (const auto& [key, field] :
         {std::pair{"hr_resize_x", &p.hires_width}, std::pair{"hr_resize_y", &p.hires_height}}) {
        if (auto v = f.integer(key, 0, limits.max_side)) {
            if (*v != 0) check_image_side(*v, key, limits);
            *field = *v;
        }
    }
    if (p.hires) {
        if (auto v = f.number("denoising_strength", 0, 1))
            p.hires_denoising_strength = to_float(*v);
    }
}

void read_img2img(const FieldReader& f, cli::CliParams& p, RequestInputs& in) {
    auto images = f.strings("init_images");
    if (!images || images->empty()) throw bad_field("init_images", "required (one base64 image)");
    if (images->size() > 1) throw bad_field("init_images", "only one image is supported");
    in.init_image = decode_image_text((*images)[0], 3, "init_images[0]");
    in.init_image_field = "init_images[0]";
    if (auto mask = f.string("mask")) in.mask_image = decode_image_text(*mask, 1, "mask");
    in.invert_mask = f.boolean("inpainting_mask_invert").value_or(false);
    if (auto v = f.number("denoising_strength", 0, 1)) p.strength = to_float(*v);
    if (auto v = f.integer("resize_mode", 0, 3); v && *v != 0)
        throw bad_field("resize_mode", "only 0 (just resize) is supported");
    f.integer("mask_blur", 0, 1024);
    f.integer("inpainting_fill", 0, 3);
    f.boolean("inpaint_full_res");
    f.integer("inpaint_full_res_padding", 0, 4096);
    f.boolean("include_init_images");
}

json echo_parameters(const json& body, bool img2img) {
    json echo = body;
    // As the webui does, input images are not sent back unless asked for.
    // Read as the field rules read it (0/1 too): json::value would throw on a number.
    if (img2img && !FieldReader(body).boolean("include_init_images").value_or(false)) {
        echo["init_images"] = nullptr;
        echo["mask"] = nullptr;
    }
    return echo;
}

}  // namespace

SdapiRequest parse_sdapi_request(const json& body, bool img2img, const ParseContext& ctx) {
    const FieldReader f(body);
    const ServerLimits& limits = ctx.limits;
    cli::CliParams p = ctx.defaults;
    RequestInputs inputs;
    OutputOptions output;
    SdapiRequest out;
    out.img2img = img2img;
    check_ignored_fields(f);
    std::string prompt = f.string("prompt").value_or(p.prompt);
    if (auto v = f.string("negative_prompt")) p.negative_prompt = *v;
    if (auto v = f.int64("seed")) p.seed = *v < 0 ? -1 : *v;
    read_sampler(f, p);
    const int batch_size = f.integer("batch_size", 1, limits.max_batch).value_or(1);
    const int n_iter = f.integer("n_iter", 1, limits.max_batch).value_or(1);
    if (batch_size * n_iter > limits.max_batch)
        throw bad_field("n_iter", "batch_size x n_iter = " + std::to_string(batch_size * n_iter) +
                                      " images is more than " + std::to_string(limits.max_batch));
    p.batch_count = batch_size * n_iter;
    if (auto v = f.integer("steps", 1, limits.max_steps)) p.sample_params.sample_steps = *v;
    if (auto v = f.number("cfg_scale", 0, 100)) p.sample_params.guidance.txt_cfg = to_float(*v);
    if (img2img) p.width = p.height = -1;  // the init image's size unless given
    if (auto v = read_image_side(f, "width", limits)) p.width = *v;
    if (auto v = read_image_side(f, "height", limits)) p.height = *v;
    if (auto v = f.number("eta", 0, 100)) p.sample_params.eta = to_float(*v);
    if (auto v = f.integer("clip_skip", -1, 12)) p.clip_skip = *v;
    read_override_settings(f, p);
    if (f.boolean("tiling").value_or(false))
        throw bad_field("tiling", "seamless tiling is set when the server starts (--circular)");
    if (f.has("lora")) inputs.loras = read_loras(f, "lora", ctx.defaults.lora_model_dir);
    if (img2img)
        read_img2img(f, p, inputs);
    else
        read_hires(f, limits, p);
    // The reference's extra_images: reference images for an edit model.
    if (auto list = f.strings("extra_images")) {
        for (size_t i = 0; i < list->size(); ++i)
            inputs.ref_images.push_back(decode_image_text(
                (*list)[i], 3, f.name("extra_images") + "[" + std::to_string(i) + "]"));
    }
    out.send_images = f.boolean("send_images").value_or(true);
    apply_extra_args(prompt, "prompt", ctx, p, inputs, output);
    out.parameters = echo_parameters(body, img2img);
    out.spec = finalize_request(std::move(p), std::move(inputs), output, ctx);
    return out;
}

}  // namespace server
