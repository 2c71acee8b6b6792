// The *_init defaults are the reference library's, and *_to_str describe the structs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stable-diffusion.h"

namespace {

std::string take(char* text) {
    EXPECT_NE(text, nullptr);
    std::string s = text ? text : "";
    std::free(text);
    return s;
}

TEST(Params, ContextDefaults) {
    sd_ctx_params_t p;
    std::memset(&p, 0x5A, sizeof(p));
    sd_ctx_params_init(&p);
    EXPECT_EQ(p.model_path, nullptr);
    EXPECT_EQ(p.vae_path, nullptr);
    EXPECT_EQ(p.embeddings, nullptr);
    EXPECT_EQ(p.embedding_count, 0u);
    EXPECT_EQ(p.n_threads, sd_get_num_physical_cores());
    EXPECT_EQ(p.wtype, SD_TYPE_COUNT);
    EXPECT_EQ(p.rng_type, CUDA_RNG);
    EXPECT_EQ(p.sampler_rng_type, RNG_TYPE_COUNT);
    EXPECT_EQ(p.prediction, PREDICTION_COUNT);
    EXPECT_EQ(p.lora_apply_mode, LORA_APPLY_AUTO);
    EXPECT_FALSE(p.enable_mmap);
    EXPECT_FALSE(p.flash_attn);
    EXPECT_EQ(p.vae_format, SD_VAE_FORMAT_AUTO);
    EXPECT_EQ(p.max_vram, nullptr);
    EXPECT_FALSE(p.stream_layers);
    EXPECT_FALSE(p.eager_load);
    EXPECT_TRUE(p.auto_fit);
    EXPECT_EQ(p.backend, nullptr);
    EXPECT_EQ(p.params_backend, nullptr);
    EXPECT_EQ(p.split_mode, nullptr);
    EXPECT_EQ(p.rpc_servers, nullptr);
    EXPECT_EQ(p.model_args, nullptr);
    EXPECT_EQ(p.ip_adapter_path, nullptr);
    EXPECT_EQ(p.pulid_weights_path, nullptr);
    std::string text = take(sd_ctx_params_to_str(&p));
    EXPECT_NE(text.find("auto_fit: true"), std::string::npos) << text;
    EXPECT_NE(text.find("rng_type: cuda"), std::string::npos) << text;
    EXPECT_NE(text.find("wtype: NONE"), std::string::npos);
}

TEST(Params, SampleDefaults) {
    sd_sample_params_t s;
    sd_sample_params_init(&s);
    EXPECT_EQ(s.guidance.txt_cfg, 7.0f);
    EXPECT_TRUE(std::isinf(s.guidance.img_cfg));
    EXPECT_EQ(s.guidance.distilled_guidance, 3.5f);
    EXPECT_EQ(s.guidance.slg.layers, nullptr);
    EXPECT_EQ(s.guidance.slg.layer_count, 0u);
    EXPECT_EQ(s.guidance.slg.layer_start, 0.01f);
    EXPECT_EQ(s.guidance.slg.layer_end, 0.2f);
    EXPECT_EQ(s.guidance.slg.scale, 0.f);
    EXPECT_EQ(s.scheduler, SCHEDULER_COUNT);
    EXPECT_EQ(s.sample_method, SAMPLE_METHOD_COUNT);
    EXPECT_EQ(s.sample_steps, 20);
    EXPECT_TRUE(std::isinf(s.eta));
    EXPECT_EQ(s.shifted_timestep, 0);
    EXPECT_EQ(s.custom_sigmas, nullptr);
    EXPECT_TRUE(std::isinf(s.flow_shift));
    EXPECT_EQ(s.extra_sample_args, nullptr);
    s.sample_method = DPMPP2M_SAMPLE_METHOD;
    s.scheduler = KARRAS_SCHEDULER;
    std::string text = take(sd_sample_params_to_str(&s));
    EXPECT_NE(text.find("sample_method: dpm++2m"), std::string::npos) << text;
    EXPECT_NE(text.find("scheduler: karras"), std::string::npos);
    EXPECT_NE(text.find("img_cfg: 7.00"), std::string::npos);  // shown as txt_cfg when unset
}

TEST(Params, ImageGenerationDefaults) {
    sd_img_gen_params_t g;
    sd_img_gen_params_init(&g);
    EXPECT_EQ(g.prompt, nullptr);
    EXPECT_EQ(g.clip_skip, -1);
    EXPECT_EQ(g.width, 512);
    EXPECT_EQ(g.height, 512);
    EXPECT_EQ(g.strength, 0.75f);
    EXPECT_EQ(g.seed, -1);
    EXPECT_EQ(g.batch_count, 1);
    EXPECT_EQ(g.control_strength, 0.9f);
    EXPECT_EQ(g.pm_params.style_strength, 20.f);
    EXPECT_EQ(g.init_image.data, nullptr);
    EXPECT_EQ(g.sample_params.sample_steps, 20);
    EXPECT_FALSE(g.vae_tiling_params.enabled);
    EXPECT_EQ(g.vae_tiling_params.target_overlap, 0.5f);
    EXPECT_EQ(g.cache.mode, SD_CACHE_DISABLED);
    EXPECT_FALSE(g.hires.enabled);
    EXPECT_EQ(g.hires.upscaler, SD_HIRES_UPSCALER_LATENT);
    EXPECT_EQ(g.hires.scale, 2.0f);
    EXPECT_EQ(g.hires.denoising_strength, 0.7f);
    EXPECT_EQ(g.hires.upscale_tile_size, 128);
    g.prompt = "a lovely cat";
    g.seed = 42;
    std::string text = take(sd_img_gen_params_to_str(&g));
    EXPECT_NE(text.find("prompt: a lovely cat\n"), std::string::npos) << text;
    EXPECT_NE(text.find("seed: 42\n"), std::string::npos);
    EXPECT_NE(text.find("upscaler=Latent"), std::string::npos);
}

TEST(Params, CacheHiresVideoDefaults) {
    sd_cache_params_t c;
    sd_cache_params_init(&c);
    EXPECT_EQ(c.mode, SD_CACHE_DISABLED);
    EXPECT_TRUE(std::isinf(c.reuse_threshold));
    EXPECT_EQ(c.start_percent, 0.15f);
    EXPECT_EQ(c.end_percent, 0.95f);
    EXPECT_EQ(c.Fn_compute_blocks, 8);
    EXPECT_EQ(c.residual_diff_threshold, 0.08f);
    EXPECT_EQ(c.max_cached_steps, -1);
    EXPECT_TRUE(c.scm_policy_dynamic);
    EXPECT_EQ(c.spectrum_m, 3);
    sd_hires_params_t h;
    sd_hires_params_init(&h);
    EXPECT_EQ(h.target_width, 0);
    EXPECT_EQ(h.steps, 0);
    sd_vid_gen_params_t v;
    sd_vid_gen_params_init(&v);
    EXPECT_EQ(v.video_frames, 6);
    EXPECT_EQ(v.fps, 16);
    EXPECT_EQ(v.moe_boundary, 0.875f);
    EXPECT_EQ(v.vace_strength, 1.f);
    EXPECT_EQ(v.seed, -1);
    EXPECT_EQ(v.sample_params.sample_steps, 20);
    EXPECT_EQ(v.high_noise_sample_params.sample_steps, -1);
}

TEST(Params, NullArgumentsAreHarmless) {
    sd_ctx_params_init(nullptr);
    sd_sample_params_init(nullptr);
    sd_img_gen_params_init(nullptr);
    sd_vid_gen_params_init(nullptr);
    sd_cache_params_init(nullptr);
    sd_hires_params_init(nullptr);
    EXPECT_EQ(sd_ctx_params_to_str(nullptr), nullptr);
    EXPECT_EQ(sd_sample_params_to_str(nullptr), nullptr);
    EXPECT_EQ(sd_img_gen_params_to_str(nullptr), nullptr);
}

// C lets a caller store any number in an enum field: the text says "?" and a context with one
// is refused naming the field, before any file is opened (and without loading the field as
// the enum: UBSan's check in the ASan + UBSan suite).
TEST(Params, EnumFieldsOutsideTheirEnumsAreNamed) {
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    int bad = 99;
    std::memcpy(&cp.rng_type, &bad, sizeof bad);
    std::memcpy(&cp.prediction, &bad, sizeof bad);
    const std::string text = take(sd_ctx_params_to_str(&cp));
    EXPECT_NE(text.find("rng_type: ?"), std::string::npos) << text;
    EXPECT_NE(text.find("prediction: ?"), std::string::npos) << text;

    static std::string log;
    sd_set_log_callback([](sd_log_level_t, const char* t, void*) { log += t; }, nullptr);
    cp.model_path = "/nonexistent/model.safetensors";
    const struct {
        size_t offset;
        const char* name;
    } fields[] = {{offsetof(sd_ctx_params_t, rng_type), "rng_type 99"},
                  {offsetof(sd_ctx_params_t, sampler_rng_type), "sampler_rng_type 99"},
                  {offsetof(sd_ctx_params_t, prediction), "prediction 99"},
                  {offsetof(sd_ctx_params_t, lora_apply_mode), "lora_apply_mode 99"}};
    for (const auto& f : fields) {
        sd_ctx_params_init(&cp);
        cp.model_path = "/nonexistent/model.safetensors";
        std::memcpy(reinterpret_cast<char*>(&cp) + f.offset, &bad, sizeof bad);
        log.clear();
        EXPECT_EQ(new_sd_ctx(&cp), nullptr);
        EXPECT_NE(log.find(f.name), std::string::npos) << log;
    }
    sd_set_log_callback(nullptr, nullptr);

    sd_sample_params_t sp;
    sd_sample_params_init(&sp);
    std::memcpy(&sp.scheduler, &bad, sizeof bad);
    EXPECT_NE(take(sd_sample_params_to_str(&sp)).find("scheduler: ?"), std::string::npos);
    sd_img_gen_params_t ip;
    sd_img_gen_params_init(&ip);
    std::memcpy(&ip.cache.mode, &bad, sizeof bad);
    std::memcpy(&ip.hires.upscaler, &bad, sizeof bad);
    const std::string img = take(sd_img_gen_params_to_str(&ip));
    EXPECT_NE(img.find("upscaler=?"), std::string::npos) << img;
    EXPECT_NE(img.find("cache: ?"), std::string::npos) << img;
}

}  // namespace
