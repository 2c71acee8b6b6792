#include "pipeline/sd_pipeline.h"

#include <cmath>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "ops/ops.h"
#include "pipeline/vae_tiling.h"
#include "tensor/caching_allocator.h"

namespace sd {
namespace {

constexpr int64_t kLatentChannels = 4;
constexpr int64_t kVaeFactor = 8;

bool is_sd2(ModelFamily f) {
    return f == ModelFamily::SD2 || f == ModelFamily::SD2Inpaint;
}
bool is_inpaint(ModelFamily f) {
    return f == ModelFamily::SD1Inpaint || f == ModelFamily::SD2Inpaint;
}

ClipTokenizer find_tokenizer(const ModelFiles& files, const PipelineOptions& options) {
    ClipTokenizerSearch search;
    search.tokenizer_dir = options.tokenizer_dir;
    search.model_path = options.model_path;
    for (const TensorFile& f : files.files()) {
        if (ClipTokenizer::gguf_has_vocab(f.metadata)) search.model_file = &f;
    }
    return find_clip_tokenizer(search);
}

// SD 2.x comes as eps (512px base) and v (768px) checkpoints with the same tensors. As the
// reference does, run the UNet once on a constant input at t = 999: a v-model's output
// lies well below its input there.
bool unet_predicts_v(const UNet& unet) {
    const UNetConfig& c = unet.config();
    Tensor x = Tensor::full({1, c.in_channels, 8, 8}, 0.5f);
    if (c.in_channels > kLatentChannels) {
        // Inpaint models: the extra mask and masked-image channels are zero.
        x = concat({Tensor::full({1, kLatentChannels, 8, 8}, 0.5f),
                    Tensor::zeros({1, c.in_channels - kLatentChannels, 8, 8})},
                   1);
    }
    Tensor out =
        unet.forward(x, Tensor::full({1}, 999.0f), Tensor::full({1, 2, c.context_dim}, 0.5f));
    std::vector<float> o = out.to_vector();
    double diff = 0;
    for (float v : o) diff += static_cast<double>(v) - 0.5;
    return diff / static_cast<double>(o.size()) < -1.0;
}

Prediction model_prediction(ModelFamily family, const UNet& unet) {
    if (!is_sd2(family)) return EPS_PRED;
    bool v = unet_predicts_v(unet);
    SD_LOG_INFO("SD 2.x checkpoint predicts %s", v ? "v" : "eps");
    return v ? V_PRED : EPS_PRED;
}

void check_request(const ImageRequest& r) {
    SD_CHECK(r.width > 0 && r.height > 0, "image size %dx%d: width and height must be positive",
             r.width, r.height);
    SD_CHECK(r.width % 8 == 0 && r.height % 8 == 0,
             "image size %dx%d: width and height must be multiples of 8", r.width, r.height);
    SD_CHECK(r.steps > 0 || !r.custom_sigmas.empty(), "steps must be at least 1 (got %d)", r.steps);
    SD_CHECK(r.batch_count >= 1, "batch count must be at least 1 (got %d)", r.batch_count);
    SD_CHECK(std::isfinite(r.cfg_scale), "cfg scale must be a number");
    SD_CHECK(r.strength >= 0.0f && r.strength <= 1.0f, "strength %g is outside [0, 1]", r.strength);
    auto check_image = [&](const std::optional<Image8>& img, const char* what) {
        if (!img) return;
        SD_CHECK(img->width == r.width && img->height == r.height,
                 "the %s is %dx%d but the image to generate is %dx%d", what, img->width,
                 img->height, r.width, r.height);
    };
    check_image(r.init_image, "init image");
    check_image(r.mask_image, "mask image");
}

std::vector<float> sigma_schedule(const SdModels& m, const ImageRequest& r) {
    if (!r.custom_sigmas.empty())
        return custom_sigmas(r.custom_sigmas.data(), static_cast<int>(r.custom_sigmas.size()));
    SchedulerOptions options;
    options.ays_table = AysTable::Sd15;
    return scheduler_sigmas(r.scheduler, r.steps, m.denoiser->schedule(), options);
}

// img2img starts part-way: the last t_enc + 1 sigmas, as the reference cuts them.
std::vector<float> img2img_sigmas(const std::vector<float>& sigmas, float strength) {
    const size_t steps = sigmas.size() - 1;
    size_t t_enc = static_cast<size_t>(static_cast<float>(steps) * strength);
    if (t_enc == steps) t_enc--;
    return std::vector<float>(sigmas.begin() + static_cast<std::ptrdiff_t>(steps - t_enc - 1),
                              sigmas.end());
}

// The VAE's latent of an image in [0, 1]: a sample of the posterior (mean + std * noise,
// log-variance clamped to [-30, 20]) times the latent scale, as the reference's
// get_first_stage_encoding draws it.
Tensor encode_image(const SdModels& m, const Tensor& image01, Rng& rng) {
    auto [mean, logvar] = m.vae.encode(image01 * 2.0f + -1.0f);
    std::vector<float> noise = rng.randn(static_cast<size_t>(mean.numel()));
    Tensor out = Tensor::empty(mean.shape());
    const float* mu = mean.data<float>();
    const float* lv = logvar.data<float>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) {
        float std_dev = std::exp(0.5f * std::clamp(lv[i], -30.0f, 20.0f));
        o[i] = (mu[i] + std_dev * noise[static_cast<size_t>(i)]) * m.latent_scale;
    }
    return out;
}

// 3x3 max filter: an inpaint model's denoise mask reaches one latent pixel past the mask.
Tensor dilate(const Tensor& mask) {
    const int64_t h = mask.size(2), w = mask.size(3);
    Tensor out = Tensor::empty(mask.shape());
    const float* p = mask.data<float>();
    float* o = out.data<float>();
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
            float v = 0;
            for (int64_t dy = -1; dy <= 1; ++dy) {
                for (int64_t dx = -1; dx <= 1; ++dx) {
                    int64_t yy = y + dy, xx = x + dx;
                    if (yy >= 0 && yy < h && xx >= 0 && xx < w) v = std::max(v, p[yy * w + xx]);
                }
            }
            o[y * w + x] = v;
        }
    }
    return out;
}

// The allocator's cache (see CachingAllocator) sized to each phase. Streaming: 256 MiB
// while sampling, where the UNet's activations churn (a step then stays within ~5% of the
// default mode's), 64 MiB for the VAE, whose activations of 100s of MiB would otherwise
// stay cached past the low-memory budget. Default mode: 512 MiB while sampling (the UNet's
// weights are resident then), 1 GiB for the decode, which has the memory to itself and
// would otherwise map and fill a fresh block for most of its large activations.
void size_cache_for(const SdModels& m, bool decoding) {
    const bool streamed = m.residency == Residency::Streamed;
    const size_t mib = decoding ? (streamed ? 64 : 1024) : (streamed ? 256 : 512);
    CachingAllocator::instance().set_cache_limit(mib << 20);
}

struct Conditions {
    Tensor cond, uncond;  // cross-attention contexts
    Tensor concat;        // inpaint models: [mask, masked-image latent], else undefined
    Tensor init_latent;   // zeros for txt2img
    Tensor denoise_mask;  // where the sampler may change the latent (undefined: everywhere)
    std::vector<float> sigmas;
};

Conditions prepare(const SdModels& m, const ImageRequest& r) {
    Conditions c;
    c.cond = m.conditioner->encode(r.prompt, r.clip_skip);
    if (r.cfg_scale != 1.0f) c.uncond = m.conditioner->encode(r.negative_prompt, r.clip_skip);
    if (!m.keep_text_encoder) m.conditioner->release_weights();
    c.sigmas = sigma_schedule(m, r);
    const int64_t lh = r.height / kVaeFactor, lw = r.width / kVaeFactor;
    if (!r.init_image) {
        c.init_latent = Tensor::zeros({1, kLatentChannels, lh, lw});
        if (is_inpaint(m.family.family)) {
            // No picture to keep: the whole mask is set and the masked image is zero.
            c.concat = concat(
                {Tensor::full({1, 1, lh, lw}, 1.0f), Tensor::zeros({1, kLatentChannels, lh, lw})},
                1);
        }
        return c;
    }
    SD_CHECK(m.vae.has_encoder(), "img2img needs the VAE encoder, which was not loaded");
    if (r.strength < 1.0f) c.sigmas = img2img_sigmas(c.sigmas, r.strength);
    // The reference seeds its generator with the request's seed before encoding.
    ImageRngs rngs(r.rng, r.sampler_rng, static_cast<uint64_t>(r.seed));
    Tensor image = image_to_tensor(*r.init_image).narrow(1, 0, 3).contiguous();
    c.init_latent = encode_image(m, image, rngs.noise());
    Tensor mask = r.mask_image ? mask_to_tensor(*r.mask_image)
                               : Tensor::full({1, 1, r.height, r.width}, 1.0f);
    Tensor small_mask = latent_mask(mask, kVaeFactor);
    if (is_inpaint(m.family.family)) {
        // The masked image: the kept part of the picture, grey (0.5) where it is repainted.
        Tensor keep = add_scalar(mask * -1.0f, 1.0f);
        Tensor masked = add_scalar(keep * add_scalar(image, -0.5f), 0.5f);
        Tensor masked_latent = encode_image(m, masked, rngs.noise());
        c.concat = concat({small_mask, masked_latent}, 1);
        if (r.mask_image) c.denoise_mask = dilate(small_mask);
    } else if (r.mask_image) {
        c.denoise_mask = small_mask;
    }
    if (!m.keep_vae) m.vae.release_weights();
    CachingAllocator::instance().trim();  // the encoders' scratch is not the UNet's
    return c;
}

// The x0 prediction for one evaluation: classifier-free guidance on the raw UNet outputs,
// then the denoiser's scalings; a denoise mask keeps the init latent outside it.
Denoised denoise(const SdModels& m, const ImageRequest& r, const Conditions& c, const Tensor& x,
                 const DenoiseCall& call) {
    const Scalings s = m.denoiser->scalings(call.sigma);
    Tensor t = Tensor::full({1}, m.denoiser->sigma_to_t(call.sigma));
    Tensor input = x * s.c_in;
    if (c.concat.defined()) input = concat({input, c.concat}, 1);
    Tensor out_cond = m.unet.forward(input, t, c.cond);
    Tensor out = out_cond, out_uncond;
    if (c.uncond.defined()) {
        out_uncond = m.unet.forward(input, t, c.uncond);
        out = out_uncond + (out_cond - out_uncond) * r.cfg_scale;
    }
    auto to_x0 = [&](const Tensor& o) {
        Tensor d = o * s.c_out + x * s.c_skip;
        if (c.denoise_mask.defined()) {
            Tensor keep = add_scalar(c.denoise_mask * -1.0f, 1.0f);
            d = c.init_latent * keep + d * c.denoise_mask;
        }
        return d;
    };
    Denoised result;
    result.pred = to_x0(out);
    if (call.need_uncond) result.pred_uncond = to_x0(out_uncond.defined() ? out_uncond : out_cond);
    return result;
}

CancelMode cancel_state(const GenerationHooks& hooks) {
    return hooks.cancel ? static_cast<CancelMode>(hooks.cancel->load()) : CancelMode::None;
}

Image8 generate_one(const SdModels& m, const ImageRequest& r, const Conditions& c, int64_t seed,
                    const GenerationHooks& hooks) {
    ImageRngs rngs(r.rng, r.sampler_rng, static_cast<uint64_t>(seed));
    Tensor noise = randn_tensor(rngs.noise(), c.init_latent.shape());
    Tensor x = m.denoiser->noise_scaling(c.sigmas.front(), noise, c.init_latent);
    SamplerOptions options;
    options.eta = r.eta;
    options.is_flow = m.denoiser->is_flow();
    const double start = now_seconds();
    options.on_step = [&](const StepInfo& info) {
        if (hooks.progress)
            hooks.progress(info.step, info.steps, static_cast<float>(now_seconds() - start));
        return cancel_state(hooks) != CancelMode::All;
    };
    DenoiseFn fn = [&](const Tensor& xt, const DenoiseCall& call) {
        return denoise(m, r, c, xt, call);
    };
    size_cache_for(m, /*decoding=*/false);
    x = sample(r.method, fn, x, c.sigmas, rngs.sampler(), options);
    x = m.denoiser->inverse_noise_scaling(c.sigmas.back(), x);
    Tensor z = x * (1.0f / m.latent_scale);
    m.unet.release_weights();  // the decode's activations take their place
    size_cache_for(m, /*decoding=*/true);
    CachingAllocator::instance().trim();
    Tensor image = r.vae_tiling.enabled
                       ? decode_tiled(m.vae, z, r.vae_tiling.tile_size, r.vae_tiling.overlap)
                       : m.vae.decode(z);
    if (!m.keep_vae) m.vae.release_weights();
    CachingAllocator::instance().trim();
    return decoded_to_image(image);
}

}  // namespace

SdModels SdModels::load(const ModelFiles& files, const PipelineOptions& options) {
    SdModels m;
    m.family = detect_model_family(files);
    const ModelFamily f = m.family.family;
    if (!m.family.runnable) {
        fail("%s holds a %s model, which this program cannot run yet (it runs SD 1.x and SD 2.x)",
             files.describe_sources().c_str(), m.family.name);
    }
    SD_LOG_INFO("model family: %s", m.family.name);
    ClipTextEncoder encoder = ClipTextEncoder::load(
        Weights(files, "cond_stage_model.transformer.text_model.", options.residency));
    std::vector<TextualInversion> embeddings;
    if (!options.embeddings.empty())
        embeddings = load_textual_inversions(options.embeddings, encoder.config().hidden);
    // OpenCLIP (SD 2.x) pads its windows with 0, OpenAI's CLIP with the end token; SD 2.x
    // reads the penultimate layer by default.
    const int32_t pad = is_sd2(f) ? 0 : ClipTokenizer::kEndOfTextId;
    m.conditioner =
        std::make_unique<TextConditioner>(find_tokenizer(files, options), std::move(encoder), pad,
                                          is_sd2(f) ? 2 : 1, std::move(embeddings));
    m.unet = UNet::load(Weights(files, "model.diffusion_model.", options.residency));
    m.vae = AutoencoderKL::load(Weights(files, "first_stage_model.", options.residency),
                                options.with_vae_encoder);
    m.residency = options.residency;
    m.keep_text_encoder = options.keep_text_encoder;
    m.keep_vae = options.keep_vae;
    Prediction prediction = options.prediction;
    if (prediction == PREDICTION_COUNT) prediction = model_prediction(f, m.unet);
    m.denoiser = make_denoiser(prediction);
    return m;
}

namespace {

// However a generation ends (done, cancelled, failed), the networks' pages and the
// activations' cache leave RSS, as after a finished image.
struct IdleAfterGeneration {
    const SdModels& m;
    ~IdleAfterGeneration() {
        m.unet.release_weights();
        if (!m.keep_text_encoder) m.conditioner->release_weights();
        if (!m.keep_vae) m.vae.release_weights();
        CachingAllocator::instance().trim();
    }
};

}  // namespace

std::vector<Image8> generate_images(const SdModels& m, const ImageRequest& r,
                                    const GenerationHooks& hooks) {
    check_request(r);
    const IdleAfterGeneration idle{m};
    Conditions c = prepare(m, r);
    std::vector<Image8> images;
    for (int b = 0; b < r.batch_count; ++b) {
        if (b > 0 && cancel_state(hooks) != CancelMode::None) break;
        const int64_t seed = r.seed + b;
        SD_LOG_INFO("generating image %d/%d, seed %lld", b + 1, r.batch_count,
                    static_cast<long long>(seed));
        const double t0 = now_seconds();
        images.push_back(generate_one(m, r, c, seed, hooks));
        SD_LOG_INFO("image %d done in %.2f s", b + 1, now_seconds() - t0);
    }
    return images;
}

}  // namespace sd
