// The parts every model family is made of, as the generation loop sees them: a conditioner
// (prompt -> Conditioning), a diffusion model (noisy latent, timestep, Conditioning ->
// raw prediction), a latent codec (image <-> latent) and the denoiser that turns raw
// predictions into x0. A family (src/families) builds them from its networks; the loop
// (pipeline/generate.h) talks to nothing else.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device_tensor.h"
#include "image/image_io.h"
#include "nn/rope.h"
#include "nn/weights.h"
#include "ops/compute_type.h"
#include "pipeline/latent_format.h"
#include "sampling/cache_params.h"
#include "sampling/denoiser.h"
#include "sampling/rng.h"
#include "sampling/schedulers.h"
#include "tensor/tensor.h"

namespace sd {

// What a diffusion model is conditioned on. Each family fills the parts it has.
struct Conditioning {
    Tensor context;  // cross-attention states [1, L, D]
    Tensor vector;   // the pooled / ADM vector [1, N] (SDXL's y: pooled text + size/crop)
    // Added to the attention scores of the context's tokens as keys, f32 [L]: 0, or -inf to
    // skip one (Chroma's T5 padding); undefined: none.
    Tensor context_mask;
    float guidance = 0.0f;  // distilled guidance (FLUX.1-dev's guidance_in; set by the loop)
    // Reference images' latents (edit models: FLUX Kontext, ...), in the model's latent space,
    // and how their tokens are numbered (set by the loop, pipeline/ref_images.h).
    std::vector<Tensor> ref_latents;
    RefIndexMode ref_index = RefIndexMode::Fixed;
    // Blocks the model leaves out for this call (skip-layer guidance; set by the loop).
    std::vector<int> skip_layers;
    // An image-to-video model's image encoder states of the video's given frames (Wan I2V's
    // CLIP vision; set by the loop, the same on both sides of guidance).
    Tensor image_states;
    // A control-video model's context (Wan VACE: the control clip's latents and mask,
    // [1, 96, T, h, w]) and the strength of its hints; set by the loop, on both sides.
    Tensor control_video;
    float control_video_strength = 1.0f;
};

struct ConditionRequest {
    std::string prompt;
    int clip_skip = -1;  // <= 0: the family's default
    int width = 0;       // the image to generate (SDXL embeds its size)
    int height = 0;
    bool negative = false;  // the unconditional side of guidance
    // Images the text encoder reads with the prompt (a vision-language encoder's reference
    // images, RefImageSupport::vlm); empty for text-only encoders, which ignore it.
    std::vector<image::Image> images;
};

class Conditioner {
  public:
    virtual ~Conditioner() = default;
    virtual Conditioning encode(const ConditionRequest& request) const = 0;
    // The tokens `prompt` takes (for the prompt length limit); 0 when not counted.
    virtual size_t count_tokens(const std::string& prompt) const {
        (void)prompt;
        return 0;
    }
    // The text encoders' weights leave RSS until the next encode (see Residency).
    virtual void release_weights() const = 0;
};

// What a control model (ControlNet) adds to one diffusion model call: its residuals, which
// the model adds times strength where the control model's layout says.
struct ControlSignal {
    std::vector<Tensor> residuals;
    float strength = 1.0f;
};

class DiffusionModel {
  public:
    virtual ~DiffusionModel() = default;
    // x: [B, C, h, w] (already scaled by the denoiser's c_in, with `concat` appended for
    // inpaint models), timesteps: f32 [B], control: null or a control model's output for
    // this call. Returns the raw prediction [B, latent C, h, w].
    virtual Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                           const ControlSignal* control) const = 0;
    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c) const {
        return forward(x, timesteps, c, nullptr);
    }
    virtual int64_t in_channels() const = 0;
    // How many times the network halves the latent (a UNet: 8); the generated image's
    // sides align to the latent factor times this.
    virtual int64_t down_factor() const = 0;
    virtual void release_weights() const = 0;
    // Bytes of its weights while resident (for the memory estimate).
    virtual size_t weight_bytes() const { return 0; }
    // Whether Conditioning::skip_layers is acted on (skip-layer guidance).
    virtual bool can_skip_layers() const { return false; }
    // The kind of network, for the step caches (--cache-mode): which modes apply to it.
    virtual CacheTarget cache_target() const { return CacheTarget::Unknown; }
    // The family's own model, under a device placement's wrapper (pipeline/device_placement.h)
    // where there is one.
    virtual const DiffusionModel& unplaced() const { return *this; }
    // Whether it runs on a device (a placement's wrapper): its weights and activations are
    // then not the host's (the memory estimate).
    virtual bool on_device() const { return false; }
};

// A network that steers the diffusion model from a hint image (ControlNet). It follows the
// context's MemoryPolicy like the diffusion model (its weights leave RSS when idle).
class ControlModel {
  public:
    virtual ~ControlModel() = default;
    // image01: [1, 3, H, W] in [0, 1] at the generated size -> the encoded hint, computed
    // once a generation.
    virtual Tensor encode_hint(const Tensor& image01) const = 0;
    // x: the diffusion model's input (c_in-scaled, without an inpaint model's extra
    // channels), timesteps and conditioning as DiffusionModel::forward, hint from
    // encode_hint. Returns the residuals for the diffusion model (ControlSignal).
    virtual std::vector<Tensor> forward(const Tensor& x, const Tensor& timesteps,
                                        const Conditioning& c, const Tensor& hint) const = 0;
    virtual void release_weights() const = 0;
    virtual size_t weight_bytes() const { return 0; }
    virtual bool on_device() const { return false; }  // as DiffusionModel::on_device
};

struct VaeTiling {
    bool enabled = false;
    int tile_size = 32;    // in latent pixels
    float overlap = 0.5f;  // fraction of a tile shared with its neighbour
};

// The image encoder of an image-to-video model (Wan I2V's CLIP vision): the states of the
// video's first frame and, where the model reads it, its last; a frame not given reads as
// the encoder's "no image" (zeros, as the reference).
class ImageEncoder {
  public:
    virtual ~ImageEncoder() = default;
    virtual Tensor encode(const std::optional<image::Image>& first,
                          const std::optional<image::Image>& last) const = 0;
    virtual void release_weights() const = 0;
    virtual size_t weight_bytes() const { return 0; }
};

// Image <-> latent in the autoencoder's own space (before the family's LatentFormat).
class LatentCodec {
  public:
    virtual ~LatentCodec() = default;
    // image01: [1, 3, H, W] in [0, 1] -> a latent sample [1, C, H/f, W/f]; `rng` draws the
    // posterior's noise where the codec has one. A video codec also encodes a clip
    // [1, 3, F, H, W] to [1, C, T, H/f, W/f].
    virtual Tensor encode(const Tensor& image01, Rng& rng) const = 0;
    // A latent -> the image in [-1, 1], [1, 3, H, W].
    virtual Tensor decode(const Tensor& latent, const VaeTiling& tiling) const = 0;
    virtual bool has_encoder() const = 0;
    virtual void release_weights() const = 0;
    virtual size_t weight_bytes() const { return 0; }
    virtual bool on_device() const { return false; }  // as DiffusionModel::on_device
    // The channels of the images it encodes and decodes: 3 (RGB; where the comments above say
    // 3), or 4 (RGBA: Qwen-Image-Layered's VAE).
    virtual int64_t image_channels() const { return 3; }
};

// A family's activation memory per generated image pixel, for the memory estimate
// (pipeline/memory_estimate.h). The defaults are the UNet families', measured with peak RSS:
// SD 1.5 at 512x512 and SDXL at 1024x1024 (2.6 GiB for an untiled decode at 1024x1024).
struct ActivationFootprint {
    double diffusion_per_pixel = 2048;  // one diffusion-model call
    double decode_per_pixel = 2816;     // an untiled decode
};

// How a context computes and when a phase's weights and scratch leave memory (see
// Residency). It belongs to the context: the generation loop applies it to its own thread
// (compute type) and its own allocator budget, so contexts in one process do not fight.
struct MemoryPolicy {
    Residency residency = Residency::Resident;
    bool keep_text_encoder = false;  // keep_clip_on_cpu: stays in RSS between generations
    bool keep_vae = false;           // keep_vae_on_cpu
    ComputeType compute = ComputeType::Auto;
    int threads = 0;  // runscope: the context's -t, applied per run (0: the process default)
};

// Whether a family's diffusion model takes reference images (--ref-image) and how they are
// prepared by default: the reference program's preset for it (pipeline/ref_images.h) and the
// multiple the resized references' sides are rounded to.
struct RefImageSupport {
    bool supported = false;
    std::string preset;  // "flux_kontext", ...
    int64_t size_multiple = 16;
    bool vlm = false;  // its text encoder reads the references too (pass_to_vlm)
    // Why this model takes none though its family can (a part missing); empty: the usual words.
    std::string refusal = {};
};

// What a diffusion model reads beside the noisy latent: channels the loop appends to it (the
// reference's c_concat), built from the request by pipeline/extra_input.h.
enum class ExtraInput {
    None,
    MaskAndMaskedLatent,       // SD inpaint models: [latent-size mask, masked-image latent]
    MaskedLatentAndPixelMask,  // FLUX.1 Fill: [masked-image latent, the mask's 8x8 cells as 64]
    ControlLatent,             // FLUX.1 Canny / Depth: the control image's latent
    // Wan image-to-video: [a 4-channel mask per latent frame, 1 where a frame was given; the
    // latent of a grey clip holding the init image first (and the end image last)]
    FrameMaskAndClipLatent,
};

// What a video model makes of an init image (-i) and an end image (--end-img).
enum class VideoInit {
    None,            // text-to-video: neither is taken
    KeepFirstFrame,  // Wan2.2 TI2V: the init image's latent is the first frame, kept
    Condition,       // Wan I2V / FLF2V: both condition the model (ExtraInput, ImageEncoder)
};

// A loaded model: what the generation loop needs, built by a family.
struct ModelComponents {
    std::string family_name;  // "SD 1.x inpaint", "SDXL", ... (set by load_model)
    LatentFormat latent;      // the family's (set by load_model)
    std::unique_ptr<Conditioner> conditioner;
    std::unique_ptr<DiffusionModel> diffusion;
    // A two-expert model's (Wan2.2 A14B) expert for the schedule's high-noise steps (the
    // request's ImageRequest::high_noise); `diffusion` takes the rest. Null for one expert.
    std::unique_ptr<DiffusionModel> high_noise_diffusion;
    std::unique_ptr<LatentCodec> codec;
    std::unique_ptr<Denoiser> denoiser;
    std::unique_ptr<ControlModel> control;      // a ControlNet, when one is loaded
    ExtraInput extra_input = ExtraInput::None;  // inpaint and control-latent models' channels
    RefImageSupport ref_images;                 // none unless the family sets it
    // Its diffusion model and codec take video latents [1, C, T, h, w] (T = 1 + (frames - 1)
    // / 4), the codec decoding them to frames [F, 3, H, W].
    bool video = false;
    VideoInit video_init = VideoInit::None;
    // The diffusion model takes a control video (Wan VACE: Conditioning::control_video, built
    // from the request's control frames and its init image as the reference frame).
    bool control_video = false;
    std::unique_ptr<ImageEncoder> image_encoder;  // VideoInit::Condition's
    // Qwen-Image-Layered: an image is a latent of ImageRequest::layers + 1 frames [1, C, T, h,
    // w] (the composite, then the layers), each frame decoded alone to an RGBA image; the
    // reference images are encoded as RGBA (the codec's image_channels() is 4).
    bool rgba_layers = false;
    // The flow shift follows the request (FLUX.2's Flux2FlowDenoiser): every scheduler reads a
    // FluxFlowSchedule shifted by flux2_empirical_mu(image tokens, steps).
    bool shift_from_tokens = false;
    AysTable ays_table = AysTable::Sd15;
    ActivationFootprint footprint;  // the family's (set by load_model)
    MemoryPolicy memory;            // the context's (set by load_model)
    // The devices the diffusion model and codec run on (pipeline/device_placement.h), for
    // their figures (gpu::stream_stats); empty on the CPU.
    std::vector<std::shared_ptr<gpu::Stream>> device_streams;
    std::shared_ptr<gpu::Stream> codec_stream;  // the codec's, where it runs on a device
    // Where a ControlNet loaded for the model runs (DevicePlacement::controlnet); null: the CPU.
    std::shared_ptr<gpu::Stream> control_stream;
};

}  // namespace sd
