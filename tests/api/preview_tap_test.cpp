// The C API's preview callback through generate_image on the sd15 fixture at 64x64: which
// steps call it, with which frames (proj at latent size, tae / vae at image size), noisy
// or denoised; --taesd as the decoder; a tae preview without TAESD previews nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "stable-diffusion.h"

namespace {

struct Frame {
    int step;
    uint32_t width, height, channels;
    bool noisy;
};

void record(int step, int frame_count, sd_image_t* frames, bool is_noisy, void* data) {
    ASSERT_EQ(frame_count, 1);
    ASSERT_NE(frames[0].data, nullptr);
    static_cast<std::vector<Frame>*>(data)->push_back(
        {step, frames[0].width, frames[0].height, frames[0].channel, is_noisy});
}

class PreviewCallback : public testing::Test {
  protected:
    static sd_ctx_t* open(bool with_taesd, bool preview_only) {
        static const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
        static const std::string taesd = sd::test::generated_checkpoint("taesd", "f32", 5);
        ::setenv("SD_TOKENIZER_DIR", (sd::test::fixtures_dir() + "/tokenizers").c_str(), 1);
        sd_ctx_params_t cp;
        sd_ctx_params_init(&cp);
        cp.model_path = model.c_str();
        cp.n_threads = 2;
        if (with_taesd) cp.taesd_path = taesd.c_str();
        cp.tae_preview_only = preview_only;
        return new_sd_ctx(&cp);
    }
    // Generates 64x64 in `steps` euler steps with the preview callback set, returning the
    // frames it got.
    static std::vector<Frame> generate(sd_ctx_t* ctx, preview_t mode, int interval, bool noisy,
                                       int steps = 4) {
        std::vector<Frame> frames;
        sd_set_preview_callback(record, mode, interval, !noisy, noisy, &frames);
        sd_img_gen_params_t p;
        sd_img_gen_params_init(&p);
        p.prompt = "a lovely cat";
        p.width = p.height = 64;
        p.sample_params.sample_steps = steps;
        p.sample_params.sample_method = EULER_SAMPLE_METHOD;
        sd_image_t* images = nullptr;
        int count = 0;
        EXPECT_TRUE(generate_image(ctx, &p, &images, &count));
        EXPECT_EQ(count, 1);
        free_sd_images(images, count);
        sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
        return frames;
    }
};

TEST_F(PreviewCallback, StepsSizesAndKinds) {
    sd_ctx_t* ctx = open(/*with_taesd=*/true, /*preview_only=*/true);
    ASSERT_NE(ctx, nullptr);
    std::vector<Frame> f = generate(ctx, PREVIEW_TAE, 2, /*noisy=*/false);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].step, 2);
    EXPECT_EQ(f[1].step, 4);
    for (const Frame& x : f) {
        EXPECT_EQ(x.width, 64u);
        EXPECT_EQ(x.height, 64u);
        EXPECT_EQ(x.channels, 3u);
        EXPECT_FALSE(x.noisy);
    }
    f = generate(ctx, PREVIEW_PROJ, 1, /*noisy=*/true, 3);
    ASSERT_EQ(f.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(f[i].step, i + 1);
        EXPECT_EQ(f[i].width, 8u);
        EXPECT_TRUE(f[i].noisy);
    }
    f = generate(ctx, PREVIEW_VAE, 3, /*noisy=*/false, 3);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].step, 3);
    EXPECT_EQ(f[0].width, 64u);
    EXPECT_TRUE(generate(ctx, PREVIEW_NONE, 1, false, 2).empty());
    free_sd_ctx(ctx);
}

TEST_F(PreviewCallback, TaesdDecodesAndTaePreviewNeedsIt) {
    sd_ctx_t* plain = open(false, false);
    ASSERT_NE(plain, nullptr);
    EXPECT_TRUE(generate(plain, PREVIEW_TAE, 1, false, 2).empty());  // warned, no frames
    free_sd_ctx(plain);
    sd_ctx_t* tae = open(true, false);  // TAESD decodes; the VAE still previews
    ASSERT_NE(tae, nullptr);
    EXPECT_EQ(generate(tae, PREVIEW_VAE, 1, false, 2).size(), 2u);
    free_sd_ctx(tae);
}

}  // namespace
