#include "model_runner.h"

#include "stable-diffusion-ext.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "base/base64.h"
#include "base/error.h"
#include "generation_request.h"
#include "image/video_writer.h"
#include "image_metadata.h"
#include "log_output.h"
#include "result_images.h"
#include "server_log.h"

namespace server {
namespace {

std::vector<ResultImage> encode_results(const JobSpec& spec, const cli::ImageList& images) {
    std::vector<ResultImage> out;
    const int quality = std::clamp(spec.output.compression, 1, 100);
    for (int i = 0; i < images.size(); ++i) {
        const sd_image_t& view = images[i];
        if (!view.data) continue;
        ResultImage result;
        result.seed = sd_batch_image_seed(spec.request.seed, i);
        result.parameters = cli::image_parameters(spec.params, spec.request, result.seed);
        result.width = view.width;
        result.height = view.height;
        const std::vector<uint8_t> bytes = sd::image::encode_image(
            spec.output.format, cli::to_image(view),
            spec.output.embed_metadata ? result.parameters : std::string(), quality);
        result.b64 = sd::base64_encode(bytes);
        out.push_back(std::move(result));
    }
    return out;
}

// A clip's frames as one container file (the request's format, its fps and quality).
ResultImage encode_clip(const JobSpec& spec, const cli::ImageList& frames) {
    std::vector<sd::image::Image> images;
    for (int i = 0; i < frames.size(); ++i)
        if (frames[i].data) images.push_back(cli::to_image(frames[i]));
    ResultImage result;
    result.seed = spec.request.seed;
    result.parameters = cli::image_parameters(spec.params, spec.request, result.seed);
    result.width = images.empty() ? 0 : images[0].width;
    result.height = images.empty() ? 0 : images[0].height;
    result.frames = static_cast<int>(images.size());
    const int quality = std::clamp(spec.output.compression, 1, 100);
    result.b64 = sd::base64_encode(
        sd::image::encode_video(spec.output.video_format, images, spec.params.fps, quality));
    return result;
}

// generate_image clears a cancel made before it started, as the reference's does. While a job
// runs, its cancel flag is passed on to the library every 20 ms, so a cancel that came in
// that gap still stops it (text encoding has no progress callback to repeat it from).
class CancelRelay {
  public:
    CancelRelay(sd_ctx_t* ctx, const std::atomic<bool>* cancelled) {
        if (!cancelled) return;
        thread_ = std::thread([this, ctx, cancelled] {
            std::unique_lock<std::mutex> lock(mutex_);
            while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_; }))
                if (cancelled->load()) sd_cancel_generation(ctx, SD_CANCEL_ALL);
        });
    }
    ~CancelRelay() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        if (thread_.joinable()) thread_.join();
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace

std::unique_ptr<ModelRunner> ModelRunner::load(const cli::CliParams& params) {
    cli::GenerationRequest request = cli::resolve_request(params);
    sd_ctx_params_t ctx_params = cli::make_ctx_params(params, request);
    const sd_ctx_ext_params_t ext_params = cli::make_ctx_ext_params(params);
    sd_ctx_t* ctx = new_sd_ctx_ext(&ctx_params, &ext_params);
    if (!ctx) return nullptr;
    PreviewOptions preview;
    if (params.was_given("--preview")) preview.mode = params.preview_method;
    preview.interval = params.preview_interval;
    preview.noisy = params.preview_noisy;
    return std::unique_ptr<ModelRunner>(new ModelRunner(ctx, preview));
}

ModelRunner::ModelRunner(sd_ctx_t* ctx, const PreviewOptions& preview)
    : ctx_(ctx), relay_(ctx, preview) {}

ModelRunner::~ModelRunner() {
    free_sd_ctx(ctx_);
}

void ModelRunner::check_lora(const std::string& path) const {
    char why[1024];
    if (!sd_lora_fits(ctx_, path.c_str(), why, sizeof why)) sd::fail("%s", why);
}

void ModelRunner::interrupt() {
    sd_cancel_generation(ctx_, SD_CANCEL_ALL);
}

RunOutcome ModelRunner::run(JobSpec& spec, const RunHooks& hooks) {
    const auto t0 = std::chrono::steady_clock::now();
    RunOutcome outcome = run_job(spec, hooks);
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
    cli::log_info("job ran in %.1f ms (generation and encoding)", ms.count());
    return outcome;
}

// The library settles the seed, size, sampler, scheduler and steps; the job's spec takes
// them, so that its images' parameters and the replies name what ran. False with `why` set
// when the request cannot run on this model.
bool ModelRunner::generate(JobSpec& spec, const RunHooks& hooks, cli::ImageList& out,
                           std::string& why) {
    char message[1024];
    sd_image_t* raw = nullptr;
    int count = 0;
    bool ok = false;
    if (spec.video()) {
        sd_vid_gen_params_t params = cli::make_vid_gen_params(spec.params, spec.request);
        if (!sd_settle_vid_gen_params(ctx_, &params, message, sizeof message)) {
            why = message;
            return false;
        }
        cli::report_settled(params, spec.params, spec.request);
        sd_audio_t* audio = nullptr;
        {
            const CancelRelay relay(ctx_, hooks.cancelled);
            ok = generate_video(ctx_, &params, &raw, &count, &audio);
        }
        free_sd_audio(audio);
    } else {
        sd_img_gen_params_t params = cli::make_img_gen_params(spec.params, spec.request);
        if (!sd_settle_img_gen_params(ctx_, &params, message, sizeof message)) {
            why = message;
            return false;
        }
        cli::report_settled(params, spec.params, spec.request);
        const CancelRelay relay(ctx_, hooks.cancelled);
        ok = generate_image(ctx_, &params, &raw, &count);
    }
    if (!ok) {
        free_sd_images(raw, count);
        return false;
    }
    out = cli::ImageList(raw, count);
    return true;
}

RunOutcome ModelRunner::run_job(JobSpec& spec, const RunHooks& hooks) {
    RunOutcome outcome;
    ErrorCapture errors;
    try {
        ProgressRelay::Scope scope(relay_, hooks);
        cli::ImageList images;
        if (!generate(spec, hooks, images, outcome.error)) {
            if (outcome.error.empty())
                outcome.error = errors.text().empty() ? "the generation failed" : errors.text();
            return outcome;
        }
        if (spec.video()) {
            if (images.size() > 0) outcome.images.push_back(encode_clip(spec, images));
        } else {
            outcome.images = encode_results(spec, images);
        }
        outcome.ok = !outcome.images.empty();
        if (!outcome.ok) outcome.error = "the generation returned no images";
    } catch (const std::exception& e) {
        outcome.ok = false;
        outcome.images.clear();
        outcome.error = e.what();
    } catch (...) {
        outcome.ok = false;
        outcome.images.clear();
        outcome.error = "unexpected error while generating";
    }
    return outcome;
}

}  // namespace server
