// The tiny autoencoders and the upscaler on a Vulkan device (lavapipe in CI): --taesd on the
// VAE's device (TAESD for SD 1.5 with its UNet at a tenth of its widths, TAEHV for a tiny Wan)
// and new_upscaler_ctx's backend (ESRGAN) give the CPU's pictures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "api/c_api_test_util.h"
#include "api/tiny_wan.h"
#include "esrgan_files.h"
#include "fixture_files.h"
#include "image_compare.h"
#include "models/tiny_taehv.h"
#include "stable-diffusion.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

// A 64x64 two-step image of the tiny SD 1.5 with `taesd` decoding, on `backend`.
std::vector<uint8_t> sd15_with_taesd(const std::string& model, const std::string& taesd,
                                     const char* backend) {
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.model_path = model.c_str();
    cp.taesd_path = taesd.c_str();
    cp.backend = backend;
    cp.n_threads = 2;
    sd_ctx_t* ctx = new_sd_ctx(&cp);
    if (!ctx) return {};
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 64;
    p.seed = 42;
    p.sample_params.sample_steps = 2;
    std::vector<uint8_t> out = test::generate_one(ctx, p);
    free_sd_ctx(ctx);
    return out;
}

TEST(VulkanCodecs, TaesdDecodesOnTheVaesDevice) {
    ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
    const std::string model = test::tiny_sd15_checkpoint(false);
    const std::string taesd = test::fixture_file("taesd_f32_seed5.safetensors");
    const std::vector<uint8_t> cpu = sd15_with_taesd(model, taesd, nullptr);
    test::CapturedLog log;
    const std::vector<uint8_t> device = sd15_with_taesd(model, taesd, "vae=vulkan0");
    ASSERT_FALSE(cpu.empty());
    ASSERT_EQ(device.size(), cpu.size()) << log.text;
    EXPECT_GE(log.count("VAE decode on vulkan0"), 1) << log.text;  // the -v cost line
    const double psnr = test::psnr(device, cpu);
    std::printf("TAESD on vulkan0 against the CPU: %.2f dB\n", psnr);
    EXPECT_GE(psnr, 40.0);
}

// A five-frame 32x32 clip of the tiny Wan with a TAEHV decoding it, its codec on `backend`.
std::vector<std::vector<uint8_t>> wan_with_taehv(const std::string& taehv, const char* backend) {
    static const std::string dit = test::tiny_wan_dit();
    const std::string t5 = test::tiny_t5(true, 16101);
    const std::string vae = test::fixture_file("wan/wan21_vae_f32_seed42.safetensors");
    const std::string tokenizers = test::fixtures_dir() + "/tokenizers";
    ::setenv("SD_TOKENIZER_DIR", tokenizers.c_str(), 1);
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.diffusion_model_path = dit.c_str();
    cp.t5xxl_path = t5.c_str();
    cp.vae_path = vae.c_str();
    cp.taesd_path = taehv.c_str();
    cp.backend = backend;
    cp.n_threads = 2;
    sd_ctx_t* ctx = new_sd_ctx(&cp);
    std::vector<std::vector<uint8_t>> out;
    if (!ctx) return out;
    sd_vid_gen_params_t v;
    sd_vid_gen_params_init(&v);
    v.prompt = "a cat";
    v.width = v.height = 32;
    v.video_frames = 5;
    v.seed = 3;
    v.sample_params.sample_steps = 2;
    sd_image_t* frames = nullptr;
    int count = 0;
    if (generate_video(ctx, &v, &frames, &count, nullptr))
        for (int i = 0; i < count; ++i) out.push_back(test::image_bytes(frames[i]));
    free_sd_images(frames, count);
    free_sd_ctx(ctx);
    return out;
}

TEST(VulkanCodecs, TaehvDecodesAClipOnTheVaesDevice) {
    const std::string taehv = test::tiny_taehv(16, false, "vulkan_taehv");
    const auto cpu = wan_with_taehv(taehv, nullptr);
    test::CapturedLog log;
    const auto device = wan_with_taehv(taehv, "vae=vulkan0");
    ASSERT_EQ(cpu.size(), 5u);
    ASSERT_EQ(device.size(), 5u) << log.text;
    EXPECT_GE(log.count("VAE decode on vulkan0"), 1) << log.text;
    for (size_t f = 0; f < cpu.size(); ++f) {
        const double psnr = test::psnr(device[f], cpu[f]);
        std::printf("TAEHV frame %zu on vulkan0 against the CPU: %.2f dB\n", f, psnr);
        EXPECT_GE(psnr, 40.0) << f;
    }
}

TEST(VulkanCodecs, TheUpscalerRunsOnTheDevice) {
    const std::string path = test::temp_path("vulkan_esrgan.safetensors");
    test::TinyEsrgan t;
    t.blocks = 3;
    t.feat = 16;
    t.grow = 8;
    test::write_tiny_esrgan(path, t, 17);
    std::vector<uint8_t> pixels(40 * 24 * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t((i * 37) % 251);
    const sd_image_t input{40, 24, 3, pixels.data()};
    auto run = [&](const char* backend, int tile) {
        upscaler_ctx_t* ctx = new_upscaler_ctx(path.c_str(), false, 2, tile, backend, nullptr);
        std::vector<uint8_t> out;
        if (!ctx) return out;
        sd_image_t* images = nullptr;
        int count = 0;
        if (upscale(ctx, input, 4, &images, &count) && count == 1)
            out = test::image_bytes(images[0]);
        free_sd_images(images, count);
        free_upscaler_ctx(ctx);
        return out;
    };
    const std::vector<uint8_t> cpu = run(nullptr, 0);
    test::CapturedLog log;
    const std::vector<uint8_t> device = run("vulkan0", 0);
    const std::vector<uint8_t> tiled = run("vulkan0", 16);  // three tiles, each a device call
    ASSERT_EQ(cpu.size(), size_t(160 * 96 * 3));
    ASSERT_EQ(device.size(), cpu.size()) << log.text;
    EXPECT_GE(log.count("upscaler on vulkan0"), 1) << log.text;
    EXPECT_GE(test::psnr(device, cpu), 40.0);
    ASSERT_EQ(tiled.size(), cpu.size());
    EXPECT_GE(test::psnr(tiled, run(nullptr, 16)), 40.0);
}

}  // namespace
}  // namespace sd
