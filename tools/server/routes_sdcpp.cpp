// The native async API: GET /sdcpp/v1/capabilities, POST /sdcpp/v1/img_gen and
// /sdcpp/v1/vid_gen (202 with a job id), GET /sdcpp/v1/jobs/{id} (status, progress, images), POST
// /sdcpp/v1/jobs/{id}/cancel.
#include <cmath>
#include <filesystem>

#include "http_json.h"
#include "model_lists.h"
#include "name_maps.h"
#include "requests.h"
#include "routes.h"

namespace server {
namespace {

using nlohmann::json;

json finite_or_null(float v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

json nullable_time(int64_t t) {
    return t == 0 ? json(nullptr) : json(t);
}

json sample_params_json(const sd_sample_params_t& s, const std::vector<int>& skip_layers,
                        const std::vector<float>* custom_sigmas) {
    json out = {
        {"scheduler", s.scheduler == SCHEDULER_COUNT ? "default" : sd_scheduler_name(s.scheduler)},
        {"sample_method", s.sample_method == SAMPLE_METHOD_COUNT
                              ? "default"
                              : sd_sample_method_name(s.sample_method)},
        {"sample_steps", s.sample_steps},
        {"eta", finite_or_null(s.eta)},
        {"shifted_timestep", s.shifted_timestep},
        {"flow_shift", finite_or_null(s.flow_shift)},
        {"guidance",
         {{"txt_cfg", s.guidance.txt_cfg},
          {"img_cfg", finite_or_null(s.guidance.img_cfg)},
          {"distilled_guidance", s.guidance.distilled_guidance},
          {"slg",
           {{"layers", skip_layers},
            {"layer_start", s.guidance.slg.layer_start},
            {"layer_end", s.guidance.slg.layer_end},
            {"scale", s.guidance.slg.scale}}}}}};
    if (custom_sigmas) out["custom_sigmas"] = *custom_sigmas;
    return out;
}

// The defaults both modes share.
json shared_defaults_json(const cli::CliParams& p) {
    const sd_tiling_params_t& t = p.vae_tiling_params;
    return {{"prompt", p.prompt},
            {"negative_prompt", p.negative_prompt},
            {"clip_skip", p.clip_skip},
            {"width", p.width > 0 ? p.width : 512},
            {"height", p.height > 0 ? p.height : 512},
            {"strength", p.strength},
            {"seed", p.seed},
            {"sample_params", sample_params_json(p.sample_params, p.skip_layers, &p.custom_sigmas)},
            {"vae_tiling_params",
             {{"enabled", t.enabled},
              {"temporal_tiling", t.temporal_tiling},
              {"tile_size_x", t.tile_size_x},
              {"tile_size_y", t.tile_size_y},
              {"target_overlap", t.target_overlap},
              {"rel_size_x", t.rel_size_x},
              {"rel_size_y", t.rel_size_y},
              {"extra_tiling_args", p.extra_tiling_args}}},
            {"cache_mode", p.cache_mode.empty() ? "disabled" : p.cache_mode},
            {"cache_option", p.cache_option},
            {"scm_mask", p.scm_mask},
            {"scm_policy_dynamic", p.scm_policy_dynamic},
            {"output_compression", 100}};
}

json video_defaults_json(const cli::CliParams& p) {
    json out = shared_defaults_json(p);
    out["video_frames"] = p.video_frames;
    out["fps"] = p.fps;
    out["moe_boundary"] = p.moe_boundary;
    out["vace_strength"] = p.vace_strength;
    out["high_noise_sample_params"] =
        sample_params_json(p.high_noise_sample_params, p.high_noise_skip_layers, nullptr);
    out["output_format"] = "webm";
    return out;
}

json image_defaults_json(const cli::CliParams& p) {
    json out = shared_defaults_json(p);
    out.update({{"batch_count", p.batch_count},
                {"auto_resize_ref_image", p.auto_resize_ref_image},
                {"increase_ref_index", p.increase_ref_index},
                {"ref_image_args", p.ref_image_args},
                {"control_strength", p.control_strength},
                {"ip_adapter_strength", p.ip_adapter_strength},
                {"qwen_image_layers", p.qwen_image_layers},
                {"embed_image_metadata", p.embed_image_metadata},
                {"hires",
                 {{"enabled", p.hires},
                  {"upscaler", p.hires_upscaler},
                  {"scale", p.hires_scale},
                  {"target_width", p.hires_width},
                  {"target_height", p.hires_height},
                  {"steps", p.hires_steps},
                  {"denoising_strength", p.hires_denoising_strength},
                  {"custom_sigmas", p.hires_custom_sigmas},
                  {"upscale_tile_size", p.hires_upscale_tile_size}}},
                {"output_format", "png"}});
    return out;
}

// What this engine generates: img2img and inpainting, ControlNet (with the server's
// --control-net), reference images (edit models), LoRA, the hires fix, VAE tiling, step caches;
// IP-Adapter is not built. A clip: init and end images (Wan I2V / FLF2V / TI2V), the
// high-noise expert's own sampling (Wan2.2 A14B), VACE control frames.
json features_json() {
    return {{"init_image", true},
            {"mask_image", true},
            {"control_image", true},
            {"ip_adapter_image", false},
            {"ref_images", true},
            {"lora", true},
            {"vae_tiling", true},
            {"hires", true},
            {"cache", true},
            {"cancel_queued", true},
            {"cancel_generating", true},
            {"preview", true}};
}

json video_features_json() {
    return {{"init_image", true},
            {"end_image", true},
            {"control_frames", true},
            {"high_noise_sample_params", true},
            {"lora", true},
            {"vae_tiling", true},
            {"cache", true},
            {"cancel_queued", true},
            {"cancel_generating", true},
            {"preview", true}};
}

json capabilities_json(const ServerState& state) {
    const std::filesystem::path model(state.model_path());
    json loras = json::array();
    for (const ModelFile& f : list_loras(state.defaults.lora_model_dir))
        loras.push_back({{"name", f.name}, {"path", f.path}});
    json upscalers = json::array();
    for (const std::string& name : builtin_upscalers())
        upscalers.push_back({{"name", name}, {"model", false}, {"image_upscale", false}});
    for (const ModelFile& f : list_upscaler_models(state.defaults.hires_upscalers_dir))
        upscalers.push_back({{"name", f.name}, {"model", true}, {"image_upscale", false}});
    // A video model's server takes both modes, vid_gen first; an API node without the model
    // offers both (its workers' model decides).
    json defaults = {{"img_gen", image_defaults_json(state.defaults)}};
    json formats = {{"img_gen", json::array({"png", "jpeg", "webp"})}};
    json features = {{"img_gen", features_json()}};
    json modes = json::array({"img_gen"});
    if (state.makes_video != false) {
        defaults["vid_gen"] = video_defaults_json(state.defaults);
        formats["vid_gen"] = json::array({"webm", "webp", "avi"});
        features["vid_gen"] = video_features_json();
        modes.push_back("vid_gen");
    }
    const std::string current = state.makes_video == true ? "vid_gen" : "img_gen";
    const ServerLimits& l = state.config.limits;
    json samplers = json::array({"default"}), schedulers = json::array({"default"});
    for (const std::string& name : native_sampler_names()) samplers.push_back(name);
    for (const std::string& name : native_scheduler_names()) schedulers.push_back(name);
    return {{"model",
             {{"name", model.filename().string()},
              {"stem", model.stem().string()},
              {"path", model.string()}}},
            {"current_mode", current},
            {"supported_modes", modes},
            {"defaults", defaults[current]},
            {"defaults_by_mode", defaults},
            {"output_formats", formats[current]},
            {"output_formats_by_mode", formats},
            {"features", features[current]},
            {"features_by_mode", features},
            {"samplers", samplers},
            {"schedulers", schedulers},
            {"loras", loras},
            {"upscalers", upscalers},
            {"limits",
             {{"min_width", l.min_side},
              {"max_width", l.max_side},
              {"min_height", l.min_side},
              {"max_height", l.max_side},
              {"max_batch_count", l.max_batch},
              {"max_steps", l.max_steps},
              {"max_queue_size", state.config.max_queue_size},
              {"max_body_bytes", state.config.max_body_bytes},
              {"job_retention_seconds", state.config.job_retention_seconds}}}};
}

json progress_json(const JobSnapshot& job) {
    const JobProgress& p = job.progress;
    return {{"step", p.step},
            {"steps", p.steps},
            {"image", p.image},
            {"images", p.images},
            {"fraction", job.status == JobStatus::Completed ? 1.0
                         : p.steps > 0                      ? static_cast<double>(p.step) / p.steps
                                                            : 0.0}};
}

json preview_json(const JobSnapshot& job) {
    if (!job.preview) return nullptr;
    const JobPreview& v = *job.preview;
    return {{"step", v.step},     {"image", v.image},         {"width", v.width},
            {"height", v.height}, {"mime_type", "image/png"}, {"b64_json", v.png_b64}};
}

// A video's result: one container file, as the reference's vid_gen result.
json video_result_json(const JobSnapshot& job) {
    const ResultImage* clip = job.images->empty() ? nullptr : &job.images->front();
    const sd::image::VideoFormat format = job.spec->output.video_format;
    return {{"output_format", video_format_name(format)},
            {"mime_type", video_mime_type(format)},
            {"fps", job.spec->params.fps},
            {"frame_count", clip ? clip->frames : 0},
            {"width", clip ? clip->width : 0},
            {"height", clip ? clip->height : 0},
            {"seed", clip ? clip->seed : job.spec->request.seed},
            {"parameters", clip ? clip->parameters : ""},
            {"b64_json", clip ? clip->b64 : ""}};
}

json images_result_json(const JobSnapshot& job) {
    json images = json::array();
    for (size_t i = 0; i < job.images->size(); ++i) {
        const ResultImage& image = (*job.images)[i];
        images.push_back({{"index", i},
                          {"b64_json", image.b64},
                          {"seed", image.seed},
                          {"width", image.width},
                          {"height", image.height},
                          {"parameters", image.parameters}});
    }
    return {{"output_format", output_format_name(job.spec->output.format)},
            {"mime_type", output_mime_type(job.spec->output.format)},
            {"images", images}};
}

json job_json(const JobSnapshot& job) {
    const bool video = job.spec && job.spec->video();
    json out = {{"id", job.id},
                {"kind", video ? "vid_gen" : "img_gen"},
                {"status", job_status_name(job.status)},
                {"created", job.created},
                {"started", nullable_time(job.started)},
                {"completed", nullable_time(job.completed)},
                {"queue_position", job.queue_position},
                {"progress", progress_json(job)},
                {"result", nullptr},
                {"error", nullptr},
                {"preview", preview_json(job)}};
    if (job.status == JobStatus::Completed && job.images)
        out["result"] = video ? video_result_json(job) : images_result_json(job);
    else if (job.status == JobStatus::Failed || job.status == JobStatus::Cancelled)
        out["error"] = {{"code", job.error_code}, {"message", job.error_message}};
    return out;
}

void send_missing(httplib::Response& res, Lookup lookup, const std::string& id) {
    if (lookup == Lookup::Expired)
        send_error(
            res, 410, "job_expired",
            "job " + id + " has expired (finished jobs are kept for --job-retention seconds)");
    else
        send_error(res, 404, "job_not_found", "no job " + id);
}

// Queues a parsed job: 202 with its id and where to poll it.
void send_accepted(httplib::Response& res, ServerState& state, JobSpec spec) {
    const char* kind = spec.video() ? "vid_gen" : "img_gen";
    const std::string id = state.queue.submit(std::move(spec), "sdcpp", Retention::Timed);
    JobSnapshot job;
    state.queue.find(id, &job);
    send_json(res, 202,
              {{"id", id},
               {"kind", kind},
               {"status", job_status_name(job.status)},
               {"created", job.created},
               {"queue_position", job.queue_position},
               {"poll_url", "/sdcpp/v1/jobs/" + id}});
}

}  // namespace

void register_sdcpp_routes(httplib::Server& svr, ServerState& state) {
    svr.Get("/sdcpp/v1/capabilities",
            guarded([&state](const httplib::Request&, httplib::Response& res) {
                send_json(res, 200, capabilities_json(state));
            }));

    svr.Post("/sdcpp/v1/img_gen",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 json body = parse_body(req);
                 JobSpec spec = parse_native_request(body, state.parse_context());
                 spec.source = {"native", std::move(body)};
                 send_accepted(res, state, std::move(spec));
             }));

    svr.Post("/sdcpp/v1/vid_gen",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 if (state.makes_video == false)
                     return send_error(res, 400, "unsupported_mode",
                                       "the loaded model makes images, not videos: vid_gen needs a "
                                       "video model such as Wan (POST /sdcpp/v1/img_gen)");
                 json body = parse_body(req);
                 JobSpec spec = parse_native_video_request(body, state.parse_context());
                 spec.source = {"native_video", std::move(body)};
                 send_accepted(res, state, std::move(spec));
             }));

    svr.Get(R"(/sdcpp/v1/jobs/([A-Za-z0-9_\-]{1,80}))",
            guarded([&state](const httplib::Request& req, httplib::Response& res) {
                const std::string id = req.matches[1];
                JobSnapshot job;
                const Lookup lookup = state.queue.find(id, &job);
                if (lookup != Lookup::Found) return send_missing(res, lookup, id);
                send_json(res, 200, job_json(job));
            }));

    svr.Post(R"(/sdcpp/v1/jobs/([A-Za-z0-9_\-]{1,80})/cancel)",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 const std::string id = req.matches[1];
                 JobSnapshot job;
                 switch (state.queue.cancel(id, &job)) {
                     case CancelResult::Cancelled:
                         return send_json(res, 200, job_json(job));
                     case CancelResult::Cancelling: {
                         json out = job_json(job);
                         out["cancel_requested"] = true;
                         return send_json(res, 202, out);
                     }
                     case CancelResult::AlreadyFinished:
                         return send_error(res, 409, "job_finished",
                                           "job " + id + " has already finished (" +
                                               job_status_name(job.status) + ")");
                     case CancelResult::Expired:
                         return send_missing(res, Lookup::Expired, id);
                     case CancelResult::NotFound:
                         return send_missing(res, Lookup::NotFound, id);
                 }
             }));
}

}  // namespace server
