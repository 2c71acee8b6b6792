// generate_video through the C API on a tiny Wan (a random 1-block DiT 256 wide, a 2-block
// UMT5 64 wide over the fixtures' synthetic UMT5 vocabulary, the fixture Wan 2.1 VAE): the
// frames of a 1 + 4k clip, the frame count and size settled by the one resolver, the inputs of
// the video variants not built refused by name, an image as a one-frame video, a plain T5
// refused as Wan's text encoder, Wan2.2 A14B's two experts sharing the schedule, and LoRAs on
// either expert.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "api/tiny_wan.h"
#include "fixture_files.h"
#include "image_compare.h"
#include "io/io_test_util.h"
#include "models/tiny_clip_vision.h"
#include "models/tiny_taehv.h"
#include "models/tiny_wan_vae.h"
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

const std::string& wan21_vae() {
    static const std::string vae = test::fixture_file("wan/wan21_vae_f32_seed42.safetensors");
    return vae;
}

// A tiny Wan 2.2 VAE with TI2V's 48 latent channels.
const std::string& wan22_vae() {
    static const std::string vae =
        test::write_f32_safetensors(test::TinyWan22Vae(48).p, "tiny_wan22_vae_48");
    return vae;
}

// A context of these files; `high_noise` (when not empty) the high-noise expert.
Ctx open_files(const std::string& dit, const std::string& t5, const std::string& vae,
               const std::string& high_noise = "", const std::string& taesd = "",
               bool tae_preview_only = false) {
    const std::string tokenizers = test::fixtures_dir() + "/tokenizers";
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.diffusion_model_path = dit.c_str();
    if (!high_noise.empty()) cp.high_noise_diffusion_model_path = high_noise.c_str();
    cp.t5xxl_path = t5.c_str();
    cp.vae_path = vae.c_str();
    if (!taesd.empty()) cp.taesd_path = taesd.c_str();
    cp.tae_preview_only = tae_preview_only;
    cp.n_threads = 2;
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    ext.tokenizer_dir = tokenizers.c_str();
    return Ctx(new_sd_ctx_ext(&cp, &ext));
}

Ctx open_wan(bool umt5 = true) {
    static const std::string dit = test::tiny_wan_dit();
    return open_files(dit, test::tiny_t5(umt5, kVocab), wan21_vae());
}

// A tiny Wan2.2 TI2V: its DiT reads 48 channels, its VAE is 16x smaller in space.
Ctx open_ti2v(const std::string& vae = wan22_vae()) {
    static const std::string dit = test::tiny_wan_dit(48);
    static const std::string t5 = test::tiny_t5(true, kVocab);
    return open_files(dit, t5, vae);
}

std::vector<uint8_t> frame_bytes(const sd_image_t& frame) {
    return {frame.data, frame.data + frame.width * frame.height * frame.channel};
}

// The frames of a generate_video run (empty when it fails).
std::vector<std::vector<uint8_t>> video_frames(sd_ctx_t* ctx, const sd_vid_gen_params_t& v) {
    sd_image_t* frames = nullptr;
    int count = 0;
    std::vector<std::vector<uint8_t>> out;
    if (!generate_video(ctx, &v, &frames, &count, nullptr)) return out;
    for (int i = 0; i < count; ++i) out.push_back(frame_bytes(frames[i]));
    free_sd_images(frames, count);
    return out;
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

// The library's log lines while it lives (or until stop()).
struct LogText {
    std::string text;
    LogText() {
        sd_set_log_callback(
            [](sd_log_level_t, const char* t, void* d) { static_cast<LogText*>(d)->text += t; },
            this);
    }
    ~LogText() { stop(); }
    void stop() { sd_set_log_callback(nullptr, nullptr); }
};

// A 32x32 one-step image request.
sd_img_gen_params_t small_image_params() {
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a cat";
    p.width = 32;
    p.height = 32;
    p.sample_params.sample_steps = 1;
    return p;
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

// Step previews of a video: the callback gets every latent frame's projection (proj), or
// every frame decoded (vae).
struct PreviewLog {
    int calls = 0, frames = 0;
    uint32_t width = 0;
};

// The preview callback counting into a PreviewLog.
void record_preview(int, int count, sd_image_t* frames, bool, void* data) {
    auto* l = static_cast<PreviewLog*>(data);
    ++l->calls;
    l->frames = count;
    l->width = count > 0 ? frames[0].width : 0;
}

TEST(GenerateVideo, PreviewsShowEveryFrame) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    PreviewLog log;
    sd_set_preview_callback(record_preview, PREVIEW_PROJ, 1, true, false, &log);
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    v.sample_params.sample_steps = 2;
    EXPECT_EQ(video_frames(ctx.get(), v).size(), 5u);
    EXPECT_EQ(log.calls, 2);
    EXPECT_EQ(log.frames, 2);  // two latent frames
    EXPECT_EQ(log.width, 4u);  // the latent's width
    log = {};
    sd_set_preview_callback(record_preview, PREVIEW_VAE, 1, true, false, &log);
    EXPECT_EQ(video_frames(ctx.get(), v).size(), 5u);
    sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
    EXPECT_EQ(log.calls, 2);
    EXPECT_EQ(log.frames, 5);
    EXPECT_EQ(log.width, 32u);
}

// --taesd with a TAEHV (taew2_1): the tae previews decode every frame; with
// tae_preview_only the clip is the VAE's still, else TAEHV decodes it too. A TAESD (image)
// file is refused by name.
TEST(GenerateVideo, TaehvPreviewsAndDecodesTheClip) {
    static const std::string dit = test::tiny_wan_dit();
    const std::string t5 = test::tiny_t5(true, kVocab);
    const std::string taehv = test::tiny_taehv(16, false, "video_taehv");
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    v.sample_params.sample_steps = 2;
    Ctx vae_only = open_files(dit, t5, wan21_vae());
    ASSERT_NE(vae_only, nullptr);
    const auto by_vae = video_frames(vae_only.get(), v);
    ASSERT_EQ(by_vae.size(), 5u);

    Ctx previews = open_files(dit, t5, wan21_vae(), "", taehv, /*tae_preview_only=*/true);
    ASSERT_NE(previews, nullptr);
    PreviewLog log;
    sd_set_preview_callback(record_preview, PREVIEW_TAE, 1, true, false, &log);
    const auto with_previews = video_frames(previews.get(), v);
    sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
    EXPECT_EQ(log.calls, 2);
    EXPECT_EQ(log.frames, 5);  // 1 + 4 (2 - 1) frames, as the VAE's
    EXPECT_EQ(log.width, 32u);
    EXPECT_EQ(with_previews, by_vae) << "previews only: the VAE still decodes the clip";

    Ctx tae_decodes = open_files(dit, t5, wan21_vae(), "", taehv);
    ASSERT_NE(tae_decodes, nullptr);
    const auto by_tae = video_frames(tae_decodes.get(), v);
    ASSERT_EQ(by_tae.size(), 5u);
    EXPECT_EQ(by_tae[0].size(), by_vae[0].size());
    EXPECT_NE(by_tae, by_vae) << "TAEHV decodes the clip";

    LogText errors;
    const std::string taesd = test::fixture_file("taesd_f32_seed5.safetensors");
    EXPECT_EQ(open_files(dit, t5, wan21_vae(), "", taesd), nullptr);
    errors.stop();
    EXPECT_NE(errors.text.find("need a TAEHV video autoencoder"), std::string::npos) << errors.text;
}

TEST(GenerateVideo, AnImageIsAOneFrameVideo) {
    Ctx ctx = open_wan();
    ASSERT_NE(ctx, nullptr);
    const sd_img_gen_params_t p = small_image_params();
    sd_image_t* images = nullptr;
    int count = 0;
    ASSERT_TRUE(generate_image(ctx.get(), &p, &images, &count));
    ASSERT_EQ(count, 1);
    EXPECT_EQ(images[0].width, 32u);
    free_sd_images(images, count);
}

TEST(GenerateVideo, Ti2vMakesAClipFromText) {
    Ctx ctx = open_ti2v();
    ASSERT_NE(ctx, nullptr);
    sd_vid_gen_params_t v = video_params(40, 32, 5);
    ASSERT_TRUE(sd_settle_vid_gen_params(ctx.get(), &v, nullptr, 0));
    EXPECT_EQ(v.width, 64);  // the 32-pixel grid: 16x VAE, 2x2 patches
    EXPECT_EQ(v.height, 32);
    const auto frames = video_frames(ctx.get(), v);
    ASSERT_EQ(frames.size(), 5u);
    EXPECT_EQ(frames[0].size(), 64u * 32 * 3);
    EXPECT_NE(frames[0], frames[4]);
}

// TI2V's init image is the first latent frame, kept through sampling: the first frame (decoded
// from that latent frame alone, the VAE being causal) is the same whatever the seed, the later
// ones are not; without the image the first frame follows the seed too.
TEST(GenerateVideo, Ti2vKeepsTheInitImageAsTheFirstFrame) {
    Ctx ctx = open_ti2v();
    ASSERT_NE(ctx, nullptr);
    std::vector<uint8_t> pixels(64 * 32 * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 % 251);
    sd_vid_gen_params_t v = video_params(64, 32, 5);
    v.init_image = {64, 32, 3, pixels.data()};
    v.sample_params.sample_steps = 2;
    v.seed = 1;
    const auto a = video_frames(ctx.get(), v);
    v.seed = 2;
    const auto b = video_frames(ctx.get(), v);
    ASSERT_EQ(a.size(), 5u);
    ASSERT_EQ(b.size(), 5u);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_NE(a[4], b[4]);
    v.init_image = {};
    const auto c = video_frames(ctx.get(), v);
    ASSERT_EQ(c.size(), 5u);
    EXPECT_NE(c[0], b[0]);
}

// A Wan 2.1 VAE (16 channels) given to TI2V, and an end image to a model without one.
TEST(GenerateVideo, Ti2vNamesAWrongVaeAndRefusesAnEndImage) {
    LogText log;
    EXPECT_EQ(open_ti2v(wan21_vae()), nullptr);
    log.stop();
    EXPECT_NE(log.text.find("--vae"), std::string::npos) << log.text;
    EXPECT_NE(log.text.find("Wan 2.2 VAE"), std::string::npos) << log.text;
    Ctx ctx = open_ti2v();
    ASSERT_NE(ctx, nullptr);
    std::vector<uint8_t> pixels(64 * 32 * 3, 100);
    sd_vid_gen_params_t v = video_params(64, 32, 5);
    v.end_image = {64, 32, 3, pixels.data()};
    char why[512] = "";
    EXPECT_FALSE(sd_settle_vid_gen_params(ctx.get(), &v, why, sizeof why));
    EXPECT_NE(std::string(why).find("--end-img"), std::string::npos) << why;
}

// A tiny Wan 2.1 image-to-video model (FLF2V's when `flf`) with a tiny CLIP-vision tower.
Ctx open_i2v(bool flf, bool with_clip_vision = true) {
    const std::string dit = test::tiny_wan_dit(16, test::kTinyWanText, test::kTinyClipWidth, flf);
    static const std::string clip =
        test::write_f32_safetensors(test::tiny_clip_vision(false), "tiny_clip_vision");
    static const std::string t5 = test::tiny_t5(true, kVocab);
    const std::string tokenizers = test::fixtures_dir() + "/tokenizers";
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.diffusion_model_path = dit.c_str();
    cp.t5xxl_path = t5.c_str();
    cp.vae_path = wan21_vae().c_str();
    cp.clip_vision_path = with_clip_vision ? clip.c_str() : nullptr;
    cp.n_threads = 2;
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    ext.tokenizer_dir = tokenizers.c_str();
    return Ctx(new_sd_ctx_ext(&cp, &ext));
}

// Image-to-video: the init image (and FLF2V's end image) steer the clip -- another init image
// gives other frames, the same one the same frames -- and the run without one still works
// (the reference's grey clip and zero CLIP states).
TEST(GenerateVideo, ImageToVideoFollowsItsFrames) {
    for (bool flf : {false, true}) {
        Ctx ctx = open_i2v(flf);
        ASSERT_NE(ctx, nullptr) << "flf " << flf;
        std::vector<uint8_t> a(32 * 32 * 3), b(32 * 32 * 3);
        for (size_t i = 0; i < a.size(); ++i) {
            a[i] = static_cast<uint8_t>(i * 13 % 256);
            b[i] = static_cast<uint8_t>(255 - i * 5 % 256);
        }
        sd_vid_gen_params_t v = video_params(32, 32, 5);
        v.init_image = {32, 32, 3, a.data()};
        if (flf) v.end_image = {32, 32, 3, b.data()};
        const auto first = video_frames(ctx.get(), v);
        const auto again = video_frames(ctx.get(), v);
        v.init_image = {32, 32, 3, b.data()};
        const auto other = video_frames(ctx.get(), v);
        v.init_image = {};
        v.end_image = {};
        const auto none = video_frames(ctx.get(), v);
        ASSERT_EQ(first.size(), 5u);
        EXPECT_EQ(first, again);
        ASSERT_EQ(other.size(), 5u);
        EXPECT_NE(first[0], other[0]);
        EXPECT_EQ(none.size(), 5u);
    }
}

TEST(GenerateVideo, AnImageToVideoModelMakesNoImages) {
    Ctx ctx = open_i2v(false);
    ASSERT_NE(ctx, nullptr);
    const sd_img_gen_params_t p = small_image_params();
    LogText log;
    sd_image_t* images = nullptr;
    int count = 0;
    EXPECT_FALSE(generate_image(ctx.get(), &p, &images, &count));
    log.stop();
    EXPECT_NE(log.text.find("image-to-video model"), std::string::npos) << log.text;
}

TEST(GenerateVideo, ImageToVideoWithoutClipVisionIsNamed) {
    LogText log;
    EXPECT_EQ(open_i2v(false, /*with_clip_vision=*/false), nullptr);
    log.stop();
    EXPECT_NE(log.text.find("--clip_vision"), std::string::npos) << log.text;
}

TEST(GenerateVideo, APlainT5IsNotWansTextEncoder) {
    EXPECT_EQ(open_wan(/*umt5=*/false), nullptr);
}

// Wan2.2 A14B's pair: `low` (--diffusion-model) and, when given, `high`
// (--high-noise-diffusion-model), tiny Wan 2.1-shaped DiTs of two weight seeds.
Ctx open_experts(uint32_t low, uint32_t high = 0) {
    static const std::string t5 = test::tiny_t5(true, kVocab);
    auto dit = [](uint32_t seed) {
        return test::tiny_wan_dit(16, test::kTinyWanText, 0, false, seed);
    };
    return open_files(dit(low), t5, wan21_vae(), high ? dit(high) : "");
}

// 4 steps of flow shift 5: sigmas 1, 0.9375, 0.833, 0.625, 0; the MoE boundary 0.875 gives the
// high-noise expert the first 2.
sd_vid_gen_params_t moe_params() {
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    v.sample_params.sample_steps = 4;
    return v;
}

// The high-noise expert takes the steps above the boundary and the low-noise one goes on from
// its latent: a pair of one DiT twice makes that DiT's clip; another high-noise expert changes
// it, unless the boundary gives it no step; given every step, the clip is its own alone.
TEST(GenerateVideo, TwoExpertsSplitTheScheduleAtTheBoundary) {
    Ctx a = open_experts(900), b = open_experts(901), same = open_experts(900, 900),
        pair = open_experts(900, 901);
    ASSERT_TRUE(a && b && same && pair);
    sd_vid_gen_params_t v = moe_params();
    const auto only_a = video_frames(a.get(), v);
    ASSERT_EQ(only_a.size(), 5u);
    EXPECT_EQ(video_frames(same.get(), v), only_a);
    LogText log;
    const auto split = video_frames(pair.get(), v);
    log.stop();
    ASSERT_EQ(split.size(), 5u);
    EXPECT_NE(split, only_a);
    EXPECT_NE(log.text.find("high-noise expert: 2 of 4 steps"), std::string::npos) << log.text;
    v.moe_boundary = 2.0f;  // the first sigma is below it: no high-noise step
    EXPECT_EQ(video_frames(pair.get(), v), only_a);
    v.moe_boundary = 1e-6f;  // only the last sigma is below it: every step is high-noise
    const auto only_b = video_frames(b.get(), v);
    ASSERT_EQ(only_b.size(), 5u);
    EXPECT_EQ(video_frames(pair.get(), v), only_b);
}

// --high-noise-steps N: a schedule of steps + N sigmas, the first N the high-noise expert's,
// with its own CFG scale.
TEST(GenerateVideo, ExplicitHighNoiseStepsLengthenTheSchedule) {
    Ctx a = open_experts(900), same = open_experts(900, 900), pair = open_experts(900, 901);
    ASSERT_TRUE(a && same && pair);
    sd_vid_gen_params_t v = moe_params();
    const auto four = video_frames(a.get(), v);
    ASSERT_EQ(four.size(), 5u);
    v.sample_params.sample_steps = 3;
    v.high_noise_sample_params.sample_steps = 1;
    EXPECT_EQ(video_frames(same.get(), v), four);
    const auto one_high = video_frames(pair.get(), v);
    EXPECT_NE(one_high, four);
    v.high_noise_sample_params.guidance.txt_cfg = 1.0f;
    const auto no_guidance = video_frames(pair.get(), v);
    ASSERT_EQ(no_guidance.size(), 5u);
    EXPECT_NE(no_guidance, one_high);
    sd_vid_gen_params_t settled = v;
    ASSERT_TRUE(sd_settle_vid_gen_params(pair.get(), &settled, nullptr, 0));
    EXPECT_EQ(settled.high_noise_sample_params.sample_method, EULER_SAMPLE_METHOD);
}

TEST(GenerateVideo, AHighNoiseExpertOfAnotherInputIsNamed) {
    static const std::string t5 = test::tiny_t5(true, kVocab);
    static const std::string ti2v_dit = test::tiny_wan_dit(48);
    LogText log;
    EXPECT_EQ(open_files(test::tiny_wan_dit(), t5, wan21_vae(), ti2v_dit), nullptr);
    EXPECT_EQ(open_files(ti2v_dit, t5, wan22_vae(), test::tiny_wan_dit()), nullptr);
    log.stop();
    EXPECT_NE(log.text.find("--high-noise-diffusion-model: "), std::string::npos) << log.text;
    EXPECT_NE(log.text.find("48 input channels"), std::string::npos) << log.text;
    EXPECT_NE(log.text.find("takes no high-noise diffusion model"), std::string::npos) << log.text;
    // A VACE expert beside a plain one.
    LogText vace_log;
    const std::string vace = test::tiny_wan_dit(16, test::kTinyWanText, 0, false, 901, 96);
    EXPECT_EQ(open_files(test::tiny_wan_dit(), t5, wan21_vae(), vace), nullptr);
    vace_log.stop();
    EXPECT_NE(vace_log.text.find("with VACE blocks"), std::string::npos) << vace_log.text;
}

// A LoRA in ComfyUI's names on the tiny Wan DiT's self-attention query and cross-attention key;
// with `diffusers`, the same in diffusers' names (PEFT's lora_A / lora_B).
std::string tiny_wan_lora(bool diffusers = false) {
    std::map<std::string, Tensor> p;
    uint32_t seed = 40;
    const std::pair<std::string, std::string> modules[] = {
        {"blocks.0.self_attn.q", "blocks.0.attn1.to_q"},
        {"blocks.0.cross_attn.k", "blocks.0.attn2.to_k"}};
    for (const auto& [comfy, hf] : modules) {
        const std::string key = diffusers ? "transformer." + hf : "diffusion_model." + comfy;
        p[key + (diffusers ? ".lora_A.weight" : ".lora_down.weight")] =
            test::random_tensor({4, test::kTinyWanDim}, seed++, -0.5f, 0.5f);
        p[key + (diffusers ? ".lora_B.weight" : ".lora_up.weight")] =
            test::random_tensor({test::kTinyWanDim, 4}, seed++, -0.5f, 0.5f);
    }
    return test::write_f32_safetensors(p, diffusers ? "tiny_wan_lora_hf" : "tiny_wan_lora");
}

// A LoRA patches a video model and leaves with the request; a high-noise one patches the
// high-noise expert alone (no high-noise step: no change), and a model without one ignores it
// with a warning.
TEST(GenerateVideo, LorasPatchTheirExpert) {
    Ctx a = open_experts(900), pair = open_experts(900, 901);
    ASSERT_TRUE(a && pair);
    static const std::string path = tiny_wan_lora();
    sd_lora_t lora{};
    lora.multiplier = 1.0f;
    lora.path = path.c_str();
    sd_vid_gen_params_t v = moe_params();
    const auto base = video_frames(a.get(), v);
    ASSERT_EQ(base.size(), 5u);
    v.loras = &lora;
    v.lora_count = 1;
    const auto patched = video_frames(a.get(), v);
    ASSERT_EQ(patched.size(), 5u);
    EXPECT_NE(patched, base);
    static const std::string hf_path = tiny_wan_lora(/*diffusers=*/true);
    lora.path = hf_path.c_str();
    EXPECT_EQ(video_frames(a.get(), v), patched);  // diffusers' names patch the same weights
    lora.path = path.c_str();
    lora.is_high_noise = true;
    LogText log;
    EXPECT_EQ(video_frames(a.get(), v), base);
    log.stop();
    EXPECT_NE(log.text.find("is for a high-noise expert, which the Wan model has not"),
              std::string::npos)
        << log.text;
    v.lora_count = 0;
    const auto pair_base = video_frames(pair.get(), v);
    v.lora_count = 1;
    const auto pair_high = video_frames(pair.get(), v);
    ASSERT_EQ(pair_high.size(), 5u);
    EXPECT_NE(pair_high, pair_base);
    v.moe_boundary = 2.0f;  // every step is the low-noise expert's
    EXPECT_EQ(video_frames(pair.get(), v), base);
}

// -M convert of a Wan DiT as the reference tool converts it (its norm scales and modulation
// quantized too, its embeddings and biases kept) gives a model that loads and makes the clip.
TEST(GenerateVideo, AConvertedQ8WanMakesTheClip) {
    static const std::string t5 = test::tiny_t5(true, kVocab);
    const std::string dit = test::tiny_wan_dit();
    const std::string q8 = test::temp_path("tiny_wan_dit_q8_0.gguf");
    ASSERT_TRUE(convert(dit.c_str(), nullptr, q8.c_str(), SD_TYPE_Q8_0, nullptr, false));
    Ctx f32 = open_files(dit, t5, wan21_vae()), quantized = open_files(q8, t5, wan21_vae());
    ASSERT_TRUE(f32 && quantized);
    const sd_vid_gen_params_t v = video_params(32, 32, 5);
    const auto a = video_frames(f32.get(), v), b = video_frames(quantized.get(), v);
    ASSERT_EQ(a.size(), 5u);
    ASSERT_EQ(b.size(), 5u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_GT(test::psnr(a[i], b[i]), 45.0) << "frame " << i;
    std::remove(q8.c_str());
}

// Wan VACE: a tiny VACE model (one control block after the main one, 96 context channels).
Ctx open_vace() {
    static const std::string dit = test::tiny_wan_dit(16, test::kTinyWanText, 0, false, 900, 96);
    static const std::string t5 = test::tiny_t5(true, kVocab);
    return open_files(dit, t5, wan21_vae());
}

// A 32x32 frame of one colour (RGB).
std::vector<uint8_t> plain_frame(uint8_t r, uint8_t g, uint8_t b) {
    std::vector<uint8_t> px(32 * 32 * 3);
    for (size_t i = 0; i < px.size(); i += 3) px[i] = r, px[i + 1] = g, px[i + 2] = b;
    return px;
}

double min_psnr(const std::vector<std::vector<uint8_t>>& a,
                const std::vector<std::vector<uint8_t>>& b) {
    double worst = 1e9;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        worst = std::min(worst, test::psnr(a[i], b[i]));
    return worst;
}

// The control clip steers a VACE model through its hints: at strength 0 the clip is the plain
// model's (the same main weights), whatever the control frames; missing frames are grey, so a
// grey control clip is (nearly) no control clip; other frames give another clip.
TEST(GenerateVideo, VaceFollowsItsControlClip) {
    Ctx vace = open_vace(), plain = open_wan();
    ASSERT_TRUE(vace && plain);
    auto red = plain_frame(220, 40, 30), blue = plain_frame(20, 60, 230),
         grey = plain_frame(128, 128, 128);
    sd_image_t frames_a[] = {{32, 32, 3, red.data()}, {32, 32, 3, blue.data()}};
    sd_image_t frames_grey[] = {{32, 32, 3, grey.data()}, {32, 32, 3, grey.data()}};
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    const auto base = video_frames(plain.get(), v);
    ASSERT_EQ(base.size(), 5u);
    const auto none = video_frames(vace.get(), v);  // a grey control clip
    v.control_frames = frames_a;
    v.control_frames_size = 2;
    const auto a = video_frames(vace.get(), v);
    v.vace_strength = 0.0f;
    const auto a0 = video_frames(vace.get(), v);
    v.vace_strength = 1.0f;
    v.control_frames = frames_grey;
    const auto g = video_frames(vace.get(), v);
    ASSERT_EQ(none.size(), 5u);
    ASSERT_EQ(a.size(), 5u);
    EXPECT_EQ(a0, base);                    // no hints: the main stream alone
    EXPECT_LT(min_psnr(none, base), 40.0);  // the grey context's hints count
    // 128/255 ~ 0.5, the grey the reference fills in: nearly the same clip; coloured frames
    // move it further (the random fixture VAE keeps their latents close to grey's).
    EXPECT_NE(a, none);
    EXPECT_GT(min_psnr(g, none), 70.0);
    EXPECT_GT(min_psnr(g, none), min_psnr(a, none) + 5.0);
    std::printf("grey vs none %.1f dB, coloured vs none %.1f dB\n", min_psnr(g, none),
                min_psnr(a, none));
}

// An init image is VACE's reference frame: the latent carries it first and the video drops it,
// so the clip keeps its length and differs from the one without it.
TEST(GenerateVideo, VaceTakesTheInitImageAsItsReferenceFrame) {
    Ctx vace = open_vace();
    ASSERT_TRUE(vace);
    auto red = plain_frame(220, 40, 30);
    sd_vid_gen_params_t v = video_params(32, 32, 5);
    const auto without = video_frames(vace.get(), v);
    v.init_image = {32, 32, 3, red.data()};
    LogText log;
    const auto with = video_frames(vace.get(), v);
    ASSERT_EQ(with.size(), 5u);
    EXPECT_LT(min_psnr(with, without), 40.0);
    // Another model ignores control frames, as the reference, and says so.
    Ctx plain = open_wan();
    sd_vid_gen_params_t p = video_params(32, 32, 5);
    const auto base = video_frames(plain.get(), p);
    sd_image_t frames[] = {{32, 32, 3, red.data()}};
    p.control_frames = frames;
    p.control_frames_size = 1;
    EXPECT_EQ(video_frames(plain.get(), p), base);
    EXPECT_NE(log.text.find("has no VACE blocks"), std::string::npos) << log.text;
}

}  // namespace
}  // namespace sd
