// Reference images of edit models (-r/--ref-image, the C API's ref_images), as the reference
// program prepares them: the options of --ref-image-args (a preset, then key=value overrides
// over the family's own preset), the size each image is resized to before the VAE, and the
// latents the diffusion model takes as extra tokens (Conditioning::ref_latents).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "image/image_io.h"
#include "pipeline/components.h"

namespace sd {

// How a vision-language text encoder's copies of the references are sized.
enum class RefVlmResize { None, LongestSide, Area };

// The reference's RefImageParams, field for field.
struct RefImageParams {
    bool pass_to_vlm = false;  // the text encoder reads the references (VLM families)
    bool pass_to_dit = true;   // their latents reach the diffusion model
    RefIndexMode index_mode = RefIndexMode::Fixed;
    bool force_ref_timestep_zero = false;  // Krea2's reference tokens at t = 0
    bool resize_before_vae = true;         // the --disable-auto-resize-ref-image switch
    int64_t vae_input_max_pixels = -1;     // <= 0: 1024 x 1024
    RefVlmResize vlm_resize_mode = RefVlmResize::Area;
    int64_t vlm_min_size = -1, vlm_max_size = -1;  // -1: the model's own
    bool resize_vae_to_target = false;             // the VAE input at the generated size
};

// The reference's named presets ("flux_kontext", "flux2", "qwen", ...); an sd::Error listing
// them for an unknown name.
RefImageParams ref_image_preset(const std::string& name);

// `spec` over the family's preset: "key=value" pairs separated by ',' or ';', applied left to
// right; "preset=NAME" starts over from that preset ("default": the family's). An unknown key
// or a value of the wrong kind is an sd::Error naming it.
RefImageParams parse_ref_image_args(const std::string& spec, const std::string& family_preset);

// The size (width, height) a ref_w x ref_h reference is resized to before the VAE for a
// width x height generation: the reference's area rule (the smaller of the generated area and
// vae_input_max_pixels, the reference's aspect kept; or the generated size with
// resize_vae_to_target), each side rounded to `multiple` (at least one multiple).
std::pair<int64_t, int64_t> ref_vae_size(int64_t ref_w, int64_t ref_h, int64_t width,
                                         int64_t height, const RefImageParams& params,
                                         int64_t multiple);

// `image` resampled to width x height by the reference's nearest rule (source pixel
// floor(dst * src_size / dst_size)).
image::Image resize_nearest(const image::Image& image, uint32_t width, uint32_t height);

// The references' latents in the model's latent space: each resized (when resize_before_vae),
// encoded by the model's codec with `rng` (after any init image, as the reference draws) and
// mapped through the family's LatentFormat. Throws when the codec cannot encode.
std::vector<Tensor> encode_ref_latents(const ModelComponents& model,
                                       const std::vector<image::Image>& refs,
                                       const RefImageParams& params, int64_t width, int64_t height,
                                       Rng& rng);

}  // namespace sd
