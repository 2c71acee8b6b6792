// generate_video through the C API on a tiny Wan (a random 1-block DiT 256 wide, a 2-block
// UMT5 64 wide over the fixtures' synthetic UMT5 vocabulary, the fixture Wan 2.1 VAE): the
// frames of a 1 + 4k clip, the frame count and size settled by the one resolver, the inputs of
// the video variants not built refused by name, an image as a one-frame video, and a plain T5
// refused as Wan's text encoder.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "api/tiny_wan.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr int64_t kVocab = 16101;  // the fixtures' UMT5 vocabulary

struct CtxDeleter {
    void operator()(sd_ctx_t* ctx) const { free_sd_ctx(ctx); }
};
using Ctx = std::unique_ptr<sd_ctx_t, CtxDeleter>;

Ctx open_wan(bool umt5 = true) {
    static const std::string dit = test::tiny_wan_dit();
    const std::string t5 = test::tiny_t5(umt5, kVocab);
    static const std::string vae = test::fixture_file("wan/wan21_vae_f32_seed42.safetensors");
    const std::string tokenizers = test::fixtures_dir() + "/tokenizers";
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.diffusion_model_path = dit.c_str();
    cp.t5xxl_path = t5.c_str();
    cp.vae_path = vae.c_str();
    cp.n_threads = 2;
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    ext.tokenizer_dir = tokenizers.c_str();
    return Ctx(new_sd_ctx_ext(&cp, &ext));
}

sd_vid_gen_params_t video_params(int width, int height, int frames) {
    sd_vid_gen_params_t v;
    sd_vid_gen_params_init(&v);
    v.prompt = "a lovely cat walking on the grass";
    v.negative_prompt = "blurry";
    v.width = width;
    v.height = height;
    v.video_frames = frames;
    v.seed = 7;
    v.sample_params.sample_steps = 1;
    return v;
}

TEST(GenerateVideo, AClipOfOnePlusFourKFrames) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    EXPECT_TRUE(sd_ctx_supports_video_generation(ctx.get()));
    const sd_vid_gen_params_t v = video_params(48, 32, 5);
    sd_image_t* frames = nullptr;
    int count = 0;
    sd_audio_t* audio = reinterpret_cast<sd_audio_t*>(0x1);
    ASSERT_TRUE(generate_video(ctx.get(), &v, &frames, &count, &audio));
    EXPECT_EQ(audio, nullptr);
    ASSERT_EQ(count, 5);
    for (int i = 0; i < count; ++i) {
        EXPECT_EQ(frames[i].width, 48u);
        EXPECT_EQ(frames[i].height, 32u);
        EXPECT_EQ(frames[i].channel, 3u);
    }
    // The frames after the first come from the second latent frame: not copies of the first.
    const size_t bytes = 48 * 32 * 3;
    EXPECT_NE(std::vector<uint8_t>(frames[0].data, frames[0].data + bytes),
              std::vector<uint8_t>(frames[4].data, frames[4].data + bytes));
    free_sd_images(frames, count);
}

TEST(GenerateVideo, TheResolverSettlesFramesAndSize) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    sd_vid_gen_params_t v = video_params(40, 32, 7);
    v.seed = -1;
    ASSERT_TRUE(sd_settle_vid_gen_params(ctx.get(), &v, nullptr, 0));
    EXPECT_EQ(v.video_frames, 5);  // down to 1 + 4k, as the reference
    EXPECT_EQ(v.width, 48);        // up to the 16-pixel grid (8x VAE, 2x2 patches)
    EXPECT_EQ(v.height, 32);
    EXPECT_GE(v.seed, 0);
    EXPECT_EQ(v.sample_params.sample_method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(v.sample_params.scheduler, DISCRETE_SCHEDULER);
}

TEST(GenerateVideo, InputsOfVariantsNotBuiltAreRefusedByName) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    std::vector<uint8_t> pixels(32 * 32 * 3, 128);
    const sd_image_t picture{32, 32, 3, pixels.data()};
    char why[512] = "";
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    v.init_image = picture;
    EXPECT_FALSE(sd_settle_vid_gen_params(ctx.get(), &v, why, sizeof why));
    EXPECT_NE(std::string(why).find("init image (-i"), std::string::npos) << why;
    v = video_params(32, 32, 5);
    v.end_image = picture;
    EXPECT_FALSE(sd_settle_vid_gen_params(ctx.get(), &v, why, sizeof why));
    EXPECT_NE(std::string(why).find("--end-img"), std::string::npos) << why;
    v = video_params(32, 32, 0);
    EXPECT_FALSE(sd_settle_vid_gen_params(ctx.get(), &v, why, sizeof why));
    EXPECT_NE(std::string(why).find("--video-frames 0"), std::string::npos) << why;
}

TEST(GenerateVideo, AnImageIsAOneFrameVideo) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a cat";
    p.width = 32;
    p.height = 32;
    p.sample_params.sample_steps = 1;
    sd_image_t* images = nullptr;
    int count = 0;
    ASSERT_TRUE(generate_image(ctx.get(), &p, &images, &count));
    ASSERT_EQ(count, 1);
    EXPECT_EQ(images[0].width, 32u);
    free_sd_images(images, count);
}

TEST(GenerateVideo, APlainT5IsNotWansTextEncoder) {
    EXPECT_EQ(open_wan(/*umt5=*/false), nullptr);
}

}  // namespace
}  // namespace sd
