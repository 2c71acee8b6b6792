// Two contexts in one process, each with its own compute type, noise generator and flow shift,
// generating at the same time on two threads: each gives the image it gives alone. Per-run
// state (the run's denoiser, compute type, generator, allocator budget, kernel scratch) belongs
// to the run, so one context's settings never leak into the other's images. On the FLUX
// fixture at 64x64, 2 steps. The generators differ so that the two images differ on every CPU
// (without AVX512-BF16 both compute types are f32, and this fixture's image barely moves with
// the shift).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fixture_files.h"
#include "stable-diffusion.h"

namespace {

struct RunSettings {
    const char* compute_type;  // model_args compute_type
    rng_type_t rng;
    float flow_shift;
};

sd_ctx_t* open_flux(const RunSettings& s, std::string& model_args) {
    static const std::string dit =
        sd::test::fixture_file("flux/flux_dev_d2s2_bf16_seed10.safetensors");
    static const std::string vae = sd::test::fixture_file("flux/flux_ae_f32_seed11.safetensors");
    static const std::string clip = sd::test::fixture_file("flux/clip_l_f16_seed12.safetensors");
    static const std::string t5 = sd::test::fixture_file("flux/t5xxl_l2_f16_seed13.safetensors");
    ::setenv("SD_TOKENIZER_DIR", (sd::test::fixtures_dir() + "/tokenizers").c_str(), 1);
    model_args = std::string("compute_type=") + s.compute_type;
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.diffusion_model_path = dit.c_str();
    cp.vae_path = vae.c_str();
    cp.clip_l_path = clip.c_str();
    cp.t5xxl_path = t5.c_str();
    cp.model_args = model_args.c_str();
    cp.n_threads = 2;
    cp.rng_type = s.rng;
    return new_sd_ctx(&cp);
}

std::vector<uint8_t> generate(sd_ctx_t* ctx, const RunSettings& s) {
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a lighthouse at dusk";
    p.width = p.height = 64;
    p.seed = 7;
    p.sample_params.sample_steps = 2;
    p.sample_params.sample_method = EULER_SAMPLE_METHOD;
    p.sample_params.guidance.txt_cfg = 1.0f;
    p.sample_params.flow_shift = s.flow_shift;
    sd_image_t* images = nullptr;
    int count = 0;
    if (!generate_image(ctx, &p, &images, &count) || count != 1) return {};
    std::vector<uint8_t> pixels(
        images[0].data, images[0].data + images[0].width * images[0].height * images[0].channel);
    free_sd_images(images, count);
    return pixels;
}

TEST(ConcurrentContexts, EachGivesTheImageItGivesAlone) {
    const RunSettings a{"f32", CUDA_RNG, 1.0f}, b{"bf16", CPU_RNG, 3.0f};
    std::string args_a, args_b;
    sd_ctx_t* ctx_a = open_flux(a, args_a);
    sd_ctx_t* ctx_b = open_flux(b, args_b);
    ASSERT_NE(ctx_a, nullptr);
    ASSERT_NE(ctx_b, nullptr);
    const std::vector<uint8_t> alone_a = generate(ctx_a, a);
    const std::vector<uint8_t> alone_b = generate(ctx_b, b);
    ASSERT_FALSE(alone_a.empty());
    ASSERT_FALSE(alone_b.empty());
    // The two setups differ, so a leak of one into the other would show.
    EXPECT_NE(alone_a, alone_b);

    std::vector<uint8_t> together_a, together_b;
    std::thread ta([&] { together_a = generate(ctx_a, a); });
    std::thread tb([&] { together_b = generate(ctx_b, b); });
    ta.join();
    tb.join();
    EXPECT_EQ(together_a, alone_a);
    EXPECT_EQ(together_b, alone_b);
    // And after the concurrent runs, each context still has its own settings.
    EXPECT_EQ(generate(ctx_a, a), alone_a);
    free_sd_ctx(ctx_a);
    free_sd_ctx(ctx_b);
}

}  // namespace
