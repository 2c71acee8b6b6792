#include "cli_checks.h"

#include <sstream>

#include "cli_options.h"

namespace cli {
namespace {

std::string label(const std::string& long_name) {
    const OptionSpec* spec = find_option(long_name);
    return spec ? option_label(*spec) : long_name;
}

template <class T>
std::string to_text(T value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

template <class T>
void require(bool ok, const std::string& long_name, T value, const std::string& rule) {
    if (!ok)
        throw UsageError("invalid value '" + to_text(value) + "' for " + label(long_name) + ": " +
                         rule);
}

void require_given(bool ok, const std::string& what) {
    if (!ok) throw UsageError(what);
}

void check_size(const CliParams& p, int value, const std::string& long_name) {
    if (!p.was_given(long_name)) return;
    // Other sizes are aligned up to the model's grid by the library, with a warning.
    require(value > 0, long_name, value, "must be positive");
}

void check_mode_inputs(CliParams& p) {
    switch (p.mode) {
        case Mode::Metadata:
            require_given(!p.image_path.empty(), "metadata mode needs an image: --image FILE");
            break;
        case Mode::Convert:
            require_given(!p.model_path.empty(), "convert mode needs a model: -m FILE");
            if (!p.was_given("--output")) p.output_path = "output.gguf";
            break;
        case Mode::Upscale:
            require_given(!p.esrgan_path.empty(),
                          "upscale mode needs a model: --upscale-model FILE");
            require_given(!p.init_image_path.empty(), "upscale mode needs an image: -i FILE");
            break;
        case Mode::ImgGen:
        case Mode::VidGen:
            require_given(!p.model_path.empty() || !p.diffusion_model_path.empty(),
                          "a model is needed: -m FILE or --diffusion-model FILE");
            // A mask selects what to repaint of an init image; alone it would do nothing.
            require_given(p.mask_image_path.empty() || !p.init_image_path.empty(),
                          "--mask needs an init image to repaint: -i FILE");
            break;
    }
}

void check_sampling(const CliParams& p) {
    const sd_sample_params_t& s = p.sample_params;
    require(s.sample_steps > 0, "--steps", s.sample_steps, "must be positive");
    require(s.guidance.txt_cfg >= 0, "--cfg-scale", s.guidance.txt_cfg, "must not be negative");
    require(s.shifted_timestep >= 0 && s.shifted_timestep <= 1000, "--timestep-shift",
            s.shifted_timestep, "must be in 0..1000");
    require(p.batch_count > 0, "--batch-count", p.batch_count, "must be positive");
    require(p.strength >= 0 && p.strength <= 1, "--strength", p.strength, "must be in 0..1");
    require(p.control_strength >= 0, "--control-strength", p.control_strength,
            "must not be negative");
    for (float sigma : p.custom_sigmas)
        require(sigma >= 0, "--sigmas", sigma, "sigmas must not be negative");
}

void check_outputs(const CliParams& p) {
    require(!p.output_path.empty(), "--output", p.output_path, "must not be empty");
    if (p.was_given("--output-begin-idx"))
        require(p.output_begin_idx >= 0, "--output-begin-idx", p.output_begin_idx,
                "must not be negative");
    require(p.preview_interval > 0, "--preview-interval", p.preview_interval, "must be positive");
    // The reference warns "TAE not found for preview" at every step and previews nothing.
    require_given(p.preview_method != PREVIEW_TAE || !p.taesd_path.empty(),
                  "--preview tae needs a TAESD model: --taesd FILE");
    require_given(!p.taesd_preview_only || !p.taesd_path.empty(),
                  "--taesd-preview-only needs a TAESD model: --taesd FILE");
    require(p.upscale_repeats > 0, "--upscale-repeats", p.upscale_repeats, "must be at least 1");
    require(p.upscale_tile_size > 0, "--upscale-tile-size", p.upscale_tile_size,
            "must be positive");
}

void check_video(const CliParams& p) {
    if (p.mode != Mode::VidGen) return;
    require(p.video_frames > 0, "--video-frames", p.video_frames, "must be positive");
    require(p.fps > 0, "--fps", p.fps, "must be positive");
}

void check_tiling_and_hires(const CliParams& p) {
    const sd_tiling_params_t& t = p.vae_tiling_params;
    require(t.tile_size_x >= 0 && t.tile_size_y >= 0, "--vae-tile-size",
            to_text(t.tile_size_x) + "x" + to_text(t.tile_size_y), "must not be negative");
    require(t.rel_size_x >= 0 && t.rel_size_y >= 0, "--vae-relative-tile-size",
            to_text(t.rel_size_x) + "x" + to_text(t.rel_size_y), "must not be negative");
    require(t.target_overlap >= 0 && t.target_overlap < 1, "--vae-tile-overlap", t.target_overlap,
            "must be in [0, 1)");
    require(p.hires_scale > 0, "--hires-scale", p.hires_scale, "must be positive");
    for (const auto& [value, name] :
         {std::pair{p.hires_width, "--hires-width"}, std::pair{p.hires_height, "--hires-height"}})
        require(value >= 0, name, value, "must not be negative");
    require(p.hires_steps >= 0, "--hires-steps", p.hires_steps, "must not be negative");
    require(p.hires_denoising_strength >= 0 && p.hires_denoising_strength <= 1,
            "--hires-denoising-strength", p.hires_denoising_strength, "must be in 0..1");
    require(p.hires_upscale_tile_size > 0, "--hires-upscale-tile-size", p.hires_upscale_tile_size,
            "must be positive");
}

}  // namespace

void check_params(CliParams& p) {
    check_mode_inputs(p);
    if (p.mode == Mode::Metadata || p.mode == Mode::Convert) return;
    check_size(p, p.width, "--width");
    check_size(p, p.height, "--height");
    check_sampling(p);
    check_outputs(p);
    check_video(p);
    check_tiling_and_hires(p);
}

void refuse_not_built(const CliParams& p) {
    for (const OptionSpec& spec : option_table()) {
        if (spec.not_built.empty() || !p.was_given(spec.long_name)) continue;
        throw UsageError(option_label(spec) + ": " + spec.not_built +
                         " is not built in this engine yet");
    }
}

}  // namespace cli
