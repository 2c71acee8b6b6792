// The AUTOMATIC1111 webui API (synchronous): txt2img / img2img answer
// {images, parameters, info} with the webui's field names; the discovery routes list what
// the webui clients pick from.
#include <ctime>
#include <filesystem>

#include "extras.h"
#include "http_json.h"
#include "image_metadata.h"
#include "model_lists.h"
#include "name_maps.h"
#include "requests.h"
#include "routes.h"

namespace server {
namespace {

using nlohmann::json;

std::string stem_of(const std::string& path) {
    return std::filesystem::path(path).stem().string();
}

std::string job_timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof(buffer), "%Y%m%d%H%M%S", &tm);
    return buffer;
}

std::string sampler_label(sample_method_t method) {
    const char* label = webui_sampler_label(method);
    return label ? label : sd_sample_method_name(method);
}

// The webui's "info": a JSON text describing the generation.
std::string info_text(const ServerState& state, const SdapiRequest& request,
                      const JobSnapshot& done) {
    const JobSpec& spec = *done.spec;
    const cli::CliParams& p = spec.params;
    json seeds = json::array(), prompts = json::array(), negatives = json::array(),
         infotexts = json::array();
    for (const ResultImage& image : *done.images) {
        seeds.push_back(image.seed);
        prompts.push_back(spec.request.prompt);
        negatives.push_back(spec.request.negative_prompt);
        infotexts.push_back(image.parameters);
    }
    // The seeds the images were sampled with (settled by the worker's library).
    const json seed = seeds.empty() ? json(spec.request.seed) : seeds[0];
    json extra = json::object();
    if (p.sample_params.scheduler != SCHEDULER_COUNT) {
        const char* label = webui_scheduler_label(p.sample_params.scheduler);
        extra["Schedule type"] = label ? label : sd_scheduler_name(p.sample_params.scheduler);
    }
    json info = {
        {"prompt", spec.request.prompt},
        {"all_prompts", prompts},
        {"negative_prompt", spec.request.negative_prompt},
        {"all_negative_prompts", negatives},
        {"seed", seed},
        {"all_seeds", seeds},
        {"subseed", seed},
        {"all_subseeds", seeds},
        {"subseed_strength", 0},
        {"width", spec.request.width},
        {"height", spec.request.height},
        {"sampler_name", sampler_label(p.sample_params.sample_method)},
        {"cfg_scale", p.sample_params.guidance.txt_cfg},
        {"steps", p.sample_params.sample_steps},
        {"batch_size", p.batch_count},
        {"restore_faces", false},
        {"face_restoration_model", nullptr},
        {"sd_model_name", stem_of(state.model_path())},
        {"sd_model_hash", nullptr},
        {"sd_vae_name", p.vae_path.empty() ? json(nullptr) : json(cli::base_name(p.vae_path))},
        {"sd_vae_hash", nullptr},
        {"seed_resize_from_w", -1},
        {"seed_resize_from_h", -1},
        {"denoising_strength",
         request.img2img ? p.strength : (p.hires ? p.hires_denoising_strength : 0.0f)},
        {"extra_generation_params", extra},
        {"index_of_first_image", 0},
        {"infotexts", infotexts},
        {"styles", json::array()},
        {"job_timestamp", job_timestamp()},
        {"clip_skip", p.clip_skip > 0 ? p.clip_skip : 1},
        {"is_using_inpainting_conditioning", false},
        {"version", "stable-diffusion.cpp"},
    };
    return dump_json(info);
}

void any2img(ServerState& state, const httplib::Request& req, httplib::Response& res,
             bool img2img) {
    json body = parse_body(req);
    SdapiRequest request = parse_sdapi_request(body, img2img, state.parse_context());
    request.spec.source = {img2img ? "sdapi_img2img" : "sdapi_txt2img", std::move(body)};
    JobSnapshot done = generate_and_wait(state, std::move(request.spec), "sdapi");
    json images = json::array();
    if (request.send_images)
        for (const ResultImage& image : *done.images) images.push_back(image.b64);
    send_json(res, 200,
              {{"images", images},
               {"parameters", request.parameters},
               {"info", info_text(state, request, done)}});
}

json samplers_json() {
    json out = json::array();
    out.push_back({{"name", "default"},
                   {"aliases", json::array({"default", "Automatic"})},
                   {"options", json::object()}});
    for (int i = 0; i < SAMPLE_METHOD_COUNT; ++i) {
        const auto method = static_cast<sample_method_t>(i);
        json aliases = json::array({sd_sample_method_name(method)});
        if (const char* label = webui_sampler_label(method)) aliases.push_back(label);
        for (const std::string& alias : sampler_aliases(method)) aliases.push_back(alias);
        out.push_back({{"name", sd_sample_method_name(method)},
                       {"aliases", aliases},
                       {"options", json::object()}});
    }
    return out;
}

json schedulers_json() {
    json out = json::array();
    out.push_back(
        {{"name", "default"}, {"label", "Automatic"}, {"aliases", json::array({"automatic"})}});
    for (int i = 0; i < SCHEDULER_COUNT; ++i) {
        const auto scheduler = static_cast<scheduler_t>(i);
        const char* label = webui_scheduler_label(scheduler);
        out.push_back({{"name", sd_scheduler_name(scheduler)},
                       {"label", label ? label : sd_scheduler_name(scheduler)},
                       {"aliases", json::array()}});
    }
    return out;
}

json progress_json(ServerState& state) {
    const QueueStats stats = state.queue.stats();
    auto current = state.queue.current();
    json job_state = {{"skipped", false},
                      {"interrupted", false},
                      {"job", current ? current->id : ""},
                      {"job_count", stats.queued + stats.generating},
                      {"job_timestamp", "0"},
                      {"job_no", 0},
                      {"sampling_step", current ? current->progress.step : 0},
                      {"sampling_steps", current ? current->progress.steps : 0}};
    double fraction = 0;
    if (current && current->progress.steps > 0)
        fraction = static_cast<double>(current->progress.step) / current->progress.steps;
    return {{"progress", fraction},
            {"eta_relative", 0},
            {"state", job_state},
            {"current_image", nullptr},
            {"textinfo", nullptr}};
}

}  // namespace

void register_sdapi_routes(httplib::Server& svr, ServerState& state) {
    svr.Post("/sdapi/v1/txt2img",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 any2img(state, req, res, false);
             }));
    svr.Post("/sdapi/v1/img2img",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 any2img(state, req, res, true);
             }));
    // The webui's "Interrupt": the generating job stops at its next step; its request is
    // answered 503 "cancelled".
    svr.Post("/sdapi/v1/interrupt",
             guarded([&state](const httplib::Request&, httplib::Response& res) {
                 if (auto job = state.queue.current()) state.queue.cancel(job->id, nullptr);
                 send_json(res, 200, nullptr);
             }));
    svr.Get("/sdapi/v1/samplers", guarded([](const httplib::Request&, httplib::Response& res) {
                send_json(res, 200, samplers_json());
            }));
    svr.Get("/sdapi/v1/schedulers", guarded([](const httplib::Request&, httplib::Response& res) {
                send_json(res, 200, schedulers_json());
            }));
    svr.Get(
        "/sdapi/v1/sd-models", guarded([&state](const httplib::Request&, httplib::Response& res) {
            const std::string& path = state.model_path();
            json model = {
                {"title", stem_of(path)}, {"model_name", stem_of(path)},      {"hash", nullptr},
                {"sha256", nullptr},      {"filename", cli::base_name(path)}, {"config", nullptr}};
            send_json(res, 200, json::array({model}));
        }));
    svr.Get("/sdapi/v1/options", guarded([&state](const httplib::Request&, httplib::Response& res) {
                send_json(res, 200,
                          {{"samples_format", "png"},
                           {"sd_model_checkpoint", stem_of(state.model_path())},
                           {"CLIP_stop_at_last_layers",
                            state.defaults.clip_skip > 0 ? state.defaults.clip_skip : 1}});
            }));
    // The webui's clients set options before generating; one model per server, so the
    // settings are checked and acknowledged, not stored.
    svr.Post("/sdapi/v1/options", guarded([](const httplib::Request& req, httplib::Response& res) {
                 parse_body(req);
                 send_json(res, 200, nullptr);
             }));
    svr.Get("/sdapi/v1/loras", guarded([&state](const httplib::Request&, httplib::Response& res) {
                json out = json::array();
                for (const ModelFile& f : list_loras(state.defaults.lora_model_dir))
                    out.push_back({{"name", f.name},
                                   {"alias", f.name},
                                   {"path", f.path},
                                   {"metadata", json::object()}});
                send_json(res, 200, out);
            }));
    svr.Get(
        "/sdapi/v1/upscalers", guarded([&state](const httplib::Request&, httplib::Response& res) {
            json out = json::array();
            for (const char* name : {"None", "Lanczos", "Nearest"})
                out.push_back({{"name", name},
                               {"model_name", nullptr},
                               {"model_path", nullptr},
                               {"model_url", nullptr},
                               {"scale", 4}});
            std::vector<ModelFile> models =
                list_upscaler_models(state.defaults.hires_upscalers_dir);
            if (!state.defaults.esrgan_path.empty())  // --upscale-model
                models.push_back({stem_of(state.defaults.esrgan_path), state.defaults.esrgan_path});
            for (const ModelFile& f : models)
                out.push_back({{"name", f.name},
                               {"model_name", "ESRGAN"},
                               {"model_path", f.path},
                               {"model_url", nullptr},
                               {"scale", 4}});
            send_json(res, 200, out);
        }));
    svr.Post("/sdapi/v1/extra-single-image",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 send_json(res, 200, extra_single_image(state, parse_body(req)));
             }));
    svr.Get("/sdapi/v1/latent-upscale-modes",
            guarded([](const httplib::Request&, httplib::Response& res) {
                json out = json::array();
                for (const std::string& name : latent_upscale_modes())
                    out.push_back({{"name", name}});
                send_json(res, 200, out);
            }));
    svr.Get("/sdapi/v1/progress",
            guarded([&state](const httplib::Request&, httplib::Response& res) {
                send_json(res, 200, progress_json(state));
            }));
}

}  // namespace server
