// Step previews: the linear projection against its formula, the preview sizes of each mode,
// and the generation loop's latent tap (which steps, which latents) on stand-in components.
#include "pipeline/latent_preview.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "families/latent_rgb.h"
#include "ops/ops.h"
#include "pipeline/generate.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(LatentPreview, ProjectionFollowsTheFormula) {
    const Tensor latent = test::random_tensor({1, 4, 3, 5}, 11, -3.0f, 3.0f);
    const std::vector<float> v = latent.to_vector();
    for (const LatentRgbProjection* rgb : {&kSdRgb, &kSdxlRgb}) {
        const image::Image img = project_latent_rgb(latent, *rgb);
        ASSERT_EQ(img.width, 5u);
        ASSERT_EQ(img.height, 3u);
        ASSERT_EQ(img.channels, 3u);
        int saturated = 0;
        for (int i = 0; i < 15; ++i) {
            for (int k = 0; k < 3; ++k) {
                double s = rgb->bias[k];
                for (int c = 0; c < 4; ++c) s += v[c * 15 + i] * rgb->weights[c][k];
                const double unit = std::clamp(s * 0.5 + 0.5, 0.0, 1.0);
                saturated += unit == 0.0 || unit == 1.0;
                EXPECT_NEAR(img.pixels[i * 3 + k], std::floor(unit * 255.0), 1.0) << i << " " << k;
            }
        }
        EXPECT_LT(saturated, 45);  // the values span the range, not only its ends
    }
    EXPECT_THROW(project_latent_rgb(latent, LatentRgbProjection{}), Error);
}

// A video latent's proj preview is one picture a latent frame, each that frame's projection;
// the Wan latent spaces have the reference's maps; no TAE previews a video.
TEST(LatentPreview, AVideoIsAPictureALatentFrame) {
    LatentFormat format;
    format.channels = 16;
    format.rgb = kWan21Rgb;
    const Tensor video = test::random_tensor({1, 16, 3, 2, 5}, 12, -2.0f, 2.0f);
    const LatentPreviewer proj(PREVIEW_PROJ, format, nullptr, nullptr, {}, /*video=*/true);
    const std::vector<image::Image> frames = proj.render_frames(video);
    ASSERT_EQ(frames.size(), 3u);
    for (int64_t t = 0; t < 3; ++t) {
        const Tensor frame = video.narrow(2, t, 1).contiguous().view({1, 16, 2, 5});
        EXPECT_EQ(frames[t].pixels, project_latent_rgb(frame, kWan21Rgb).pixels) << t;
        EXPECT_EQ(frames[t].width, 5u);
    }
    EXPECT_NE(frames[0].pixels, frames[1].pixels);
    EXPECT_EQ(kWan21Rgb.bias[2], -0.456853f);
    EXPECT_EQ(kWan22Rgb.weights[47][0], -0.078293f);
    EXPECT_NE(LatentPreviewer(PREVIEW_TAE, format, nullptr, nullptr, {}, true)
                  .unavailable_reason()
                  .find("TAEHV"),
              std::string::npos);
}

// Decodes a latent [1, C, h, w] to its first channel repeated, 8x the size, in [-1, 1].
class StubCodec : public LatentCodec {
  public:
    Tensor encode(const Tensor& image01, Rng&) const override { return image01; }
    Tensor decode(const Tensor& latent, const VaeTiling&) const override {
        ++decodes;
        const int64_t h = latent.size(2) * 8, w = latent.size(3) * 8;
        return Tensor::full({1, 3, h, w}, std::clamp(latent.to_vector()[0], -1.0f, 1.0f));
    }
    bool has_encoder() const override { return false; }
    void release_weights() const override {}
    mutable int decodes = 0;
};

TEST(LatentPreview, ModesAndTheirSizes) {
    LatentFormat format;
    format.rgb = kSdRgb;
    StubCodec tae, vae;
    const Tensor latent = Tensor::full({1, 4, 2, 3}, 0.25f);
    const image::Image proj =
        LatentPreviewer(PREVIEW_PROJ, format, nullptr, nullptr, {}).render(latent);
    EXPECT_EQ(proj.width, 3u);
    EXPECT_EQ(proj.height, 2u);
    const image::Image by_tae = LatentPreviewer(PREVIEW_TAE, format, &tae, &vae, {}).render(latent);
    EXPECT_EQ(by_tae.width, 24u);
    EXPECT_EQ(by_tae.height, 16u);
    EXPECT_EQ(tae.decodes, 1);
    EXPECT_EQ(vae.decodes, 0);
    // The codec sees the codec-space latent: 0.25 / 0.18215 is past 1, so white.
    EXPECT_EQ(by_tae.pixels[0], 255);
    LatentPreviewer(PREVIEW_VAE, format, &tae, &vae, {}).render(latent);
    EXPECT_EQ(vae.decodes, 1);
    EXPECT_NE(LatentPreviewer(PREVIEW_TAE, format, nullptr, &vae, {})
                  .unavailable_reason()
                  .find("--taesd"),
              std::string::npos);
    EXPECT_FALSE(LatentPreviewer(PREVIEW_PROJ, LatentFormat{}, nullptr, nullptr, {})
                     .unavailable_reason()
                     .empty());
    EXPECT_TRUE(
        LatentPreviewer(PREVIEW_VAE, format, nullptr, &vae, {}).unavailable_reason().empty());
}

// Qwen-Image-Layered's frames (an image request's latent with a time axis): the vae preview
// decodes each frame as an image of its own, as the generation does, not as a clip.
TEST(LatentPreview, LayersArePreviewedOneByOne) {
    LatentFormat format;
    format.channels = 4;
    format.rgb = kSdRgb;
    StubCodec vae;
    std::vector<Tensor> planes;
    for (int t = 0; t < 3; ++t)
        planes.push_back(Tensor::full({1, 4, 1, 2, 3}, 0.05f * static_cast<float>(t)));
    const Tensor layers = concat(planes, 2);
    const std::vector<image::Image> frames =
        LatentPreviewer(PREVIEW_VAE, format, nullptr, &vae, {}, /*video=*/false)
            .render_frames(layers);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(vae.decodes, 3);
    EXPECT_EQ(frames[0].width, 24u);
    EXPECT_LT(frames[0].pixels[0], frames[1].pixels[0]);
    EXPECT_LT(frames[1].pixels[0], frames[2].pixels[0]);
}

// --- the loop's tap, on components that compute nothing: the model predicts zero noise ---

class ZeroConditioner : public Conditioner {
  public:
    Conditioning encode(const ConditionRequest&) const override {
        Conditioning c;
        c.context = Tensor::zeros({1, 1, 8});
        return c;
    }
    void release_weights() const override {}
};

class ZeroNoise : public DiffusionModel {
  public:
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning&,
                   const ControlSignal*) const override {
        inputs.push_back(x.contiguous());
        return Tensor::zeros(x.shape());
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 1; }
    void release_weights() const override {}
    mutable std::vector<Tensor> inputs;
};

struct Tapped {
    int step;
    bool noisy;
    Tensor latent;
};

struct TapRun {
    std::vector<Tapped> seen;
    std::vector<Tensor> model_inputs;
};

TapRun run_tapped(SampleMethod method, int steps, LatentTap tap) {
    ModelComponents m;
    m.conditioner = std::make_unique<ZeroConditioner>();
    auto model = std::make_unique<ZeroNoise>();
    const ZeroNoise* net = model.get();
    m.diffusion = std::move(model);
    m.codec = std::make_unique<StubCodec>();
    m.denoiser = make_denoiser(EPS_PRED);
    ImageRequest r;
    r.width = 24;
    r.height = 16;
    r.steps = steps;
    r.cfg_scale = 1.0f;  // one evaluation a call
    r.method = method;
    std::vector<Tapped> seen;
    tap.fn = [&seen](int step, const Tensor& latent, bool noisy) {
        seen.push_back({step, noisy, latent.contiguous()});
    };
    GenerationHooks hooks;
    hooks.preview = tap;
    generate_images(m, r, hooks);
    return {seen, net->inputs};
}

TEST(LatentTapInTheLoop, DenoisedEveryStepNoisyEveryOther) {
    LatentTap tap;
    tap.denoised = true;
    std::vector<Tapped> seen = run_tapped(EULER_SAMPLE_METHOD, 4, tap).seen;
    ASSERT_EQ(seen.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(seen[i].step, i + 1);
        EXPECT_FALSE(seen[i].noisy);
        EXPECT_EQ(seen[i].latent.shape(), (Shape{1, 4, 2, 3}));
    }
    tap.denoised = false;
    tap.noisy = true;
    tap.interval = 2;
    const TapRun noisy = run_tapped(EULER_SAMPLE_METHOD, 4, tap);
    seen = noisy.seen;
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].step, 2);
    EXPECT_EQ(seen[1].step, 4);
    // The noisy latent is the model's input of that evaluation (x * c_in).
    ASSERT_EQ(noisy.model_inputs.size(), 4u);
    for (int i = 0; i < 2; ++i) {
        const test::Diff d = test::compare(seen[i].latent, noisy.model_inputs[2 * i + 1]);
        EXPECT_EQ(d.max_abs, 0.0);
        EXPECT_TRUE(seen[i].noisy);
    }
}

TEST(LatentTapInTheLoop, HeunNumbersItsFirstCallsNegative) {
    LatentTap tap;
    tap.denoised = true;
    const TapRun run = run_tapped(HEUN_SAMPLE_METHOD, 3, tap);
    std::vector<int> steps;
    for (const Tapped& t : run.seen) steps.push_back(t.step);
    // Two evaluations a step (the first numbered negative), one on the last, where heun
    // takes an Euler step: the reference's numbering, which the interval test then sees.
    EXPECT_EQ(steps, (std::vector<int>{-1, 1, -2, 2, -3}));
    // Zero predicted noise: the eps denoiser's x0 is the unscaled input, x = input / c_in.
    ASSERT_EQ(run.model_inputs.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        const Tensor& x0 = run.seen[i].latent;
        const float ratio = run.model_inputs[i].to_vector()[0] / x0.to_vector()[0];
        EXPECT_LT(ratio, 1.0f);  // c_in = 1 / sqrt(sigma^2 + 1)
        const test::Diff d = test::compare(run.model_inputs[i], x0 * ratio, 1e-3);
        EXPECT_LT(d.max_rel, 1e-4);
    }
    EXPECT_FALSE(LatentTap{}.wants(1, false));
}

}  // namespace
}  // namespace sd
