// -M img_gen / vid_gen: the reference program's flow. Read the inputs, create the context,
// have the library settle the request (seed, size, sampler, scheduler, steps) and note what
// it settled, generate, optionally upscale, and write each result with its parameters.
#include <cstdio>
#include <memory>

#include "cli_options.h"
#include "generation_request.h"
#include "input_images.h"
#include "log_output.h"
#include "modes.h"
#include "pipeline/memory_estimate.h"
#include "progress_bar.h"
#include "result_images.h"
#include "save_results.h"

namespace cli {
namespace {

struct ContextDeleter {
    void operator()(sd_ctx_t* ctx) const { free_sd_ctx(ctx); }
};
using Context = std::unique_ptr<sd_ctx_t, ContextDeleter>;

void write_preview(int, int frame_count, sd_image_t* frames, bool, void* data) {
    const auto* p = static_cast<const CliParams*>(data);
    if (frame_count < 1 || !frames || !frames[0].data) return;
    try {
        sd::image::write_image(p->preview_path, to_image(frames[0]));
    } catch (const std::exception& e) {
        log_error("save preview image to '%s' failed: %s", p->preview_path.c_str(), e.what());
    }
}

// Registers the preview writer for the length of a run.
class PreviewScope {
  public:
    explicit PreviewScope(CliParams& p) {
        if (p.preview_method == PREVIEW_NONE) return;
        sd_set_preview_callback(write_preview, p.preview_method, p.preview_interval,
                                !p.preview_noisy, p.preview_noisy, &p);
        active_ = true;
    }
    ~PreviewScope() {
        if (active_) sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
    }

  private:
    bool active_ = false;
};

void apply_canny(const CliParams& p, GenerationRequest& r) {
    if (!p.canny || r.control_image.empty()) return;
    if (!preprocess_canny(image_view(r.control_image), 0.08f, 0.08f, 0.8f, 1.0f, false))
        throw UsageError("--canny: the Canny preprocessor failed");
}

ImageList generate(sd_ctx_t* ctx, CliParams& p, GenerationRequest& r) {
    sd_image_t* images = nullptr;
    int count = 0;
    char why[1024];
    if (p.mode == Mode::VidGen) {
        sd_vid_gen_params_t params = make_vid_gen_params(p, r);
        if (!sd_settle_vid_gen_params(ctx, &params, why, sizeof why)) {
            log_error("%s", why);
            return ImageList();
        }
        report_settled(params, p, r);
        sd_audio_t* audio = nullptr;
        const bool ok = generate_video(ctx, &params, &images, &count, &audio);
        if (audio) log_warn("the generated audio is not written (audio files are not built yet)");
        free_sd_audio(audio);
        if (!ok) {
            free_sd_images(images, count);
            return ImageList();
        }
        return ImageList(images, count);
    }
    sd_img_gen_params_t params = make_img_gen_params(p, r);
    if (!sd_settle_img_gen_params(ctx, &params, why, sizeof why)) {
        log_error("%s", why);
        return ImageList();
    }
    report_settled(params, p, r);
    if (!generate_image(ctx, &params, &images, &count)) {
        free_sd_images(images, count);
        return ImageList();
    }
    return ImageList(images, count);
}

}  // namespace

int run_generate(CliParams& p) {
    GenerationRequest request = resolve_request(p);
    load_input_images(p, request);
    apply_canny(p, request);
    PreviewScope preview(p);
    ProgressBar bar(stdout, is_terminal(stdout));
    bar.install();
    // An impossible size is refused before the model loads (the library checks again with
    // the model's own figures).
    sd::check_size_before_loading(request.width, request.height, p.batch_count,
                                  p.vae_tiling_params.enabled);
    sd_ctx_params_t ctx_params = make_ctx_params(p, request);
    const sd_ctx_ext_params_t ext_params = make_ctx_ext_params(p);
    Context ctx(new_sd_ctx_ext(&ctx_params, &ext_params));
    if (!ctx) {
        log_error("new_sd_ctx failed");
        return 1;
    }
    if (!p.imat_out.empty()) {
        if (!load_imatrix_inputs(p)) return 1;
        enable_imatrix_collection();
    }
    ImageList images = generate(ctx.get(), p, request);
    ctx.reset();
    if (!p.imat_out.empty()) {
        disable_imatrix_collection();
        if (images.size() > 0) {
            std::remove(p.imat_out.c_str());  // save_imatrix reports failure by log only
            save_imatrix(p.imat_out.c_str());
            if (std::FILE* f = std::fopen(p.imat_out.c_str(), "rb")) {
                std::fclose(f);
            } else {
                log_error("--imat-out: '%s' was not written", p.imat_out.c_str());
                return 1;
            }
        }
    }
    if (images.size() == 0) {
        log_error("generate failed");
        return 1;
    }
    const bool upscaled = upscale_results(p, images);
    const bool saved = save_results(p, request, images);
    return upscaled && saved ? 0 : 1;
}

}  // namespace cli
