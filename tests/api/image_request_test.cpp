// The one request resolver, seen through the C API: sd_settle_img_gen_params writes back
// what generate_image will run (seed, size on the model's grid, the model's sampler and
// scheduler, steps, flow shift) and settles settled parameters to themselves; the typed
// context options of sd_ctx_ext_params_t (a tokenizer folder with a comma in its path), the
// library's one model_args key list and its prompt byte check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct CtxDeleter {
    void operator()(sd_ctx_t* ctx) const { free_sd_ctx(ctx); }
};
using Ctx = std::unique_ptr<sd_ctx_t, CtxDeleter>;

std::string tokenizers() {
    return sd::test::fixtures_dir() + "/tokenizers";
}

Ctx open_sd15(const char* tokenizer_dir = nullptr, const char* model_args = nullptr) {
    static const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::string dir = tokenizers();
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.model_path = model.c_str();
    cp.n_threads = 2;
    cp.model_args = model_args;
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    ext.tokenizer_dir = tokenizer_dir ? tokenizer_dir : dir.c_str();
    return Ctx(new_sd_ctx_ext(&cp, &ext));
}

sd_img_gen_params_t request(const char* prompt = "a cat") {
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = prompt;
    return p;
}

TEST(ImageRequest, SettlesTheModelsDefaultsAndWritesThemBack) {
    Ctx ctx = open_sd15();
    ASSERT_NE(ctx, nullptr);
    sd_img_gen_params_t p = request();
    p.seed = -1;
    p.width = 200;
    p.height = 152;
    p.sample_params.flow_shift = 3.0f;  // SD 1.x has none: ignored, so INFINITY
    ASSERT_EQ(p.sample_params.sample_method, SAMPLE_METHOD_COUNT);
    ASSERT_EQ(p.sample_params.scheduler, SCHEDULER_COUNT);
    char why[256] = "";
    ASSERT_TRUE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why)) << why;
    EXPECT_GE(p.seed, 0);
    EXPECT_LT(p.seed, int64_t{1} << 31);
    EXPECT_EQ(p.width, 256);  // the UNet's 64-pixel grid
    EXPECT_EQ(p.height, 192);
    EXPECT_EQ(p.sample_params.sample_method, sd_get_default_sample_method(ctx.get()));
    EXPECT_EQ(p.sample_params.scheduler,
              sd_get_default_scheduler(ctx.get(), p.sample_params.sample_method));
    EXPECT_EQ(p.sample_params.sample_method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(p.sample_params.scheduler, DISCRETE_SCHEDULER);
    EXPECT_EQ(p.sample_params.sample_steps, 20);
    EXPECT_TRUE(std::isinf(p.sample_params.flow_shift));

    // Settled parameters settle to themselves: the same seed, size and sampling.
    const sd_img_gen_params_t settled = p;
    ASSERT_TRUE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why)) << why;
    EXPECT_EQ(p.seed, settled.seed);
    EXPECT_EQ(p.width, settled.width);
    EXPECT_EQ(p.height, settled.height);
    EXPECT_EQ(p.sample_params.sample_method, settled.sample_params.sample_method);
    EXPECT_EQ(p.sample_params.scheduler, settled.sample_params.scheduler);
    EXPECT_EQ(p.sample_params.sample_steps, settled.sample_params.sample_steps);

    // The scheduler follows the method as sd_get_default_scheduler says; a given seed stays.
    sd_img_gen_params_t lcm = request();
    lcm.seed = 42;
    lcm.sample_params.sample_method = LCM_SAMPLE_METHOD;
    ASSERT_TRUE(sd_settle_img_gen_params(ctx.get(), &lcm, why, sizeof why)) << why;
    EXPECT_EQ(lcm.sample_params.scheduler, LCM_SCHEDULER);
    EXPECT_EQ(lcm.seed, 42);
}

TEST(ImageRequest, CustomSigmasSetTheStepsAndNameNoScheduler) {
    Ctx ctx = open_sd15();
    ASSERT_NE(ctx, nullptr);
    std::vector<float> sigmas = {14.6f, 7.0f, 1.0f, 0.0f};
    sd_img_gen_params_t p = request();
    p.sample_params.custom_sigmas = sigmas.data();
    p.sample_params.custom_sigmas_count = static_cast<int>(sigmas.size());
    p.hires.enabled = true;
    p.hires.scale = 1.5f;
    char why[256] = "";
    ASSERT_TRUE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why)) << why;
    EXPECT_EQ(p.sample_params.sample_steps, 3);
    EXPECT_EQ(p.sample_params.scheduler, SCHEDULER_COUNT);  // the sigmas replace it
    EXPECT_EQ(p.hires.target_width, 768);                   // 512 * 1.5 on the grid
    EXPECT_EQ(p.hires.target_height, 768);
}

TEST(ImageRequest, BadRequestsAreRefusedNamingTheOption) {
    Ctx ctx = open_sd15();
    ASSERT_NE(ctx, nullptr);
    char why[256] = "";
    sd_img_gen_params_t p = request();
    p.sample_params.shifted_timestep = 100;
    EXPECT_FALSE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why));
    EXPECT_NE(std::string(why).find("--timestep-shift"), std::string::npos) << why;
    p = request();
    p.width = 0;
    EXPECT_FALSE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why));
    p = request();
    p.sample_params.sample_method = static_cast<sample_method_t>(99);
    EXPECT_FALSE(sd_settle_img_gen_params(ctx.get(), &p, why, sizeof why));
    EXPECT_NE(std::string(why).find("sampling method 99"), std::string::npos) << why;
    EXPECT_FALSE(sd_settle_img_gen_params(nullptr, &p, why, sizeof why));
    EXPECT_FALSE(sd_settle_img_gen_params(ctx.get(), nullptr, nullptr, 0));
}

// generate_image on the parameters sd_settle_img_gen_params wrote runs the request the raw
// parameters run: the same pixels.
TEST(ImageRequest, SettledParametersGenerateTheSameImage) {
    Ctx ctx = open_sd15();
    ASSERT_NE(ctx, nullptr);
    auto run = [&](const sd_img_gen_params_t& p) {
        sd_image_t* images = nullptr;
        int count = 0;
        EXPECT_TRUE(generate_image(ctx.get(), &p, &images, &count));
        std::vector<uint8_t> pixels;
        if (count == 1 && images[0].data)
            pixels.assign(images[0].data,
                          images[0].data + images[0].width * images[0].height * images[0].channel);
        free_sd_images(images, count);
        return pixels;
    };
    sd_img_gen_params_t raw = request();
    raw.width = 40;  // aligned to 64
    raw.height = 64;
    raw.seed = 7;
    raw.sample_params.sample_steps = 1;
    sd_img_gen_params_t settled = raw;
    ASSERT_TRUE(sd_settle_img_gen_params(ctx.get(), &settled, nullptr, 0));
    EXPECT_EQ(settled.width, 64);
    const std::vector<uint8_t> a = run(raw), b = run(settled);
    ASSERT_EQ(a.size(), 64u * 64u * 3u);
    EXPECT_EQ(a, b);
}

// Video parameters on an image model: refused by the resolver, naming the model (a video
// model's go through the same resolver: tests/api/generate_video_test.cpp).
TEST(ImageRequest, VideoParametersOfAnImageModelAreRefused) {
    Ctx ctx = open_sd15();
    ASSERT_NE(ctx, nullptr);
    sd_vid_gen_params_t v;
    sd_vid_gen_params_init(&v);
    char why[512] = "";
    EXPECT_FALSE(sd_settle_vid_gen_params(ctx.get(), &v, why, sizeof why));
    EXPECT_NE(std::string(why).find("SD 1.x is an image model"), std::string::npos) << why;
}

TEST(ImageRequest, BatchSeedsAndPromptBytes) {
    EXPECT_EQ(sd_batch_image_seed(10, 0), 10);
    EXPECT_EQ(sd_batch_image_seed(10, 3), 13);
    char why[256] = "";
    const std::string ok(SD_MAX_PROMPT_BYTES_PER_TOKEN * 10, 'a');
    EXPECT_TRUE(sd_check_prompt_text(ok.data(), ok.size(), 10, "prompt", why, sizeof why));
    const std::string big = ok + "a";
    EXPECT_FALSE(
        sd_check_prompt_text(big.data(), big.size(), 10, "negative prompt", why, sizeof why));
    EXPECT_NE(std::string(why).find("negative prompt"), std::string::npos) << why;
    EXPECT_NE(std::string(why).find("--max-prompt-tokens"), std::string::npos) << why;
    EXPECT_TRUE(sd_check_prompt_text(big.data(), big.size(), 0, "prompt", why, sizeof why));
    const std::string nul("a cat\0 and a dog", 16);
    EXPECT_FALSE(sd_check_prompt_text(nul.data(), nul.size(), 0, "prompt", why, sizeof why));
    EXPECT_NE(std::string(why).find("NUL byte"), std::string::npos) << why;
    EXPECT_TRUE(sd_check_prompt_text(nullptr, 0, 10, "prompt", nullptr, 0));
    EXPECT_FALSE(sd_check_prompt_text(nullptr, 3, 10, "prompt", nullptr, 0));
    // A short buffer gets the start of the reason, NUL-terminated.
    char tiny[8];
    EXPECT_FALSE(sd_check_prompt_text(nul.data(), nul.size(), 0, "prompt", tiny, sizeof tiny));
    EXPECT_EQ(std::string(tiny), "the pro");
}

TEST(ContextOptions, ModelArgsKeysLiveInTheLibrary) {
    const std::string keys = sd_model_args_keys();
    for (const char* key : {"chroma_use_dit_mask", "chroma_use_t5_mask", "chroma_t5_mask_pad",
                            "qwen_image_zero_cond_t", "compute_type", "tokenizer_dir"})
        EXPECT_NE(keys.find(key), std::string::npos) << key;
    char why[256] = "";
    EXPECT_TRUE(sd_check_model_args(nullptr, why, sizeof why));
    EXPECT_TRUE(
        sd_check_model_args("chroma_use_dit_mask=false,compute_type=bf16", why, sizeof why));
    EXPECT_FALSE(sd_check_model_args("nope=1", why, sizeof why));
    EXPECT_NE(std::string(why).find("'nope'"), std::string::npos) << why;
    EXPECT_NE(std::string(why).find(keys), std::string::npos) << why;
    EXPECT_FALSE(sd_check_model_args("chroma_t5_mask_pad=x", why, sizeof why));
    EXPECT_NE(std::string(why).find("chroma_t5_mask_pad"), std::string::npos) << why;
    for (int i = 0; i < SD_COMPUTE_TYPE_COUNT; ++i) {
        const auto type = static_cast<sd_compute_type_t>(i);
        EXPECT_EQ(str_to_sd_compute_type(sd_compute_type_name(type)), type);
    }
    EXPECT_EQ(str_to_sd_compute_type("fp8"), SD_COMPUTE_TYPE_COUNT);
    EXPECT_EQ(sd_compute_type_name(SD_COMPUTE_TYPE_COUNT), nullptr);
}

// A tokenizer folder whose path holds a comma reaches the library typed (model_args, a
// comma-separated list, could not carry it).
TEST(ContextOptions, TokenizerFolderWithACommaWorks) {
    const std::string dir = sd::test::temp_path("ext,tok") + "/tokenizers";
    fs::create_directories(dir);
    fs::copy(tokenizers(), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    ::unsetenv("SD_TOKENIZER_DIR");
    Ctx ctx = open_sd15(dir.c_str());
    ASSERT_NE(ctx, nullptr);
    sd_img_gen_params_t p = request();
    EXPECT_TRUE(sd_settle_img_gen_params(ctx.get(), &p, nullptr, 0));
    // An out-of-range compute type is refused, naming the field.
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    cp.model_path = model.c_str();
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    EXPECT_EQ(ext.max_prompt_tokens, SD_DEFAULT_MAX_PROMPT_TOKENS);
    ext.compute_type = static_cast<sd_compute_type_t>(17);
    Ctx bad(new_sd_ctx_ext(&cp, &ext));
    EXPECT_EQ(bad, nullptr);
}

}  // namespace
