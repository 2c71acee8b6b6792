// backend / params_backend / max_vram / model_args as the reference's programs send them,
// read for this CPU build: accepted and mapped onto the residency modes, an error only for a
// device that does not exist or a malformed string.
#include <gtest/gtest.h>

#include "api/placement.h"
#include "base/error.h"
#include "gpu/devices.h"
#include "io/io_test_util.h"
#include "stable-diffusion.h"

namespace sd::api {
namespace {

sd_ctx_params_t params(const char* backend, const char* params_backend,
                       const char* max_vram = nullptr, const char* model_args = nullptr) {
    sd_ctx_params_t p;
    sd_ctx_params_init(&p);
    p.backend = backend;
    p.params_backend = params_backend;
    p.max_vram = max_vram;
    p.model_args = model_args;
    return p;
}

TEST(Placement, DefaultsKeepWeightsResident) {
    const Placement out = read_placement(params(nullptr, nullptr));
    EXPECT_EQ(out.residency, Residency::Resident);
    EXPECT_FALSE(out.keep_text_encoder);
    EXPECT_FALSE(out.keep_vae);
    EXPECT_EQ(out.compute_type, ComputeType::Auto);
}

TEST(Placement, ReferenceCliStringsAreAccepted) {
    // --clip-on-cpu --vae-on-cpu --control-net-cpu --offload-to-cpu, as the reference sends them.
    Placement out = read_placement(params("te=cpu,vae=cpu,controlnet=cpu", "*=cpu"));
    EXPECT_EQ(out.residency, Residency::Resident);
    EXPECT_TRUE(out.keep_text_encoder);
    EXPECT_TRUE(out.keep_vae);
    out = read_placement(params("CPU", "cpu"));
    EXPECT_FALSE(out.keep_text_encoder);
    out = read_placement(params("all=cpu", "all=cpu"));
    EXPECT_FALSE(out.keep_vae);
    out = read_placement(params("diffusion=cpu,vae=cpu,te=cpu", nullptr));
    EXPECT_TRUE(out.keep_vae);
}

TEST(Placement, DiskMeansStreamed) {
    EXPECT_EQ(read_placement(params(nullptr, "disk")).residency, Residency::Streamed);
    EXPECT_EQ(read_placement(params(nullptr, "*=disk")).residency, Residency::Streamed);
    EXPECT_EQ(read_placement(params(nullptr, "diffusion=disk,te=cpu")).residency,
              Residency::Streamed);
    sd_ctx_params_t p = params(nullptr, nullptr);
    p.stream_layers = true;
    EXPECT_EQ(read_placement(p).residency, Residency::Streamed);
}

TEST(Placement, MaxVramIsTextAndChecked) {
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, "3.2")));
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, "-1")));
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, "-0.75")));
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, "cpu=3.2")));
    EXPECT_THROW(read_placement(params(nullptr, nullptr, "lots")), Error);
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, "vulkan0=3.2")));
}

TEST(Placement, OnlyMissingDevicesAreErrors) {
    try {
        read_placement(params("diffusion=cuda0,vae=cpu", nullptr));
        FAIL() << "cuda0 accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("device 'cuda0' does not exist"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_placement(params("metal0", nullptr)), Error);
    EXPECT_THROW(read_placement(params(nullptr, "gpu")), Error);
    EXPECT_THROW(read_placement(params("unet=cpu", nullptr)), Error);  // unknown component
    EXPECT_THROW(read_placement(params("te=", nullptr)), Error);
    EXPECT_THROW(read_placement(params("cpu,,cpu", nullptr)), Error);
}

TEST(Placement, ModelArgsCarryTheComputeType) {
    EXPECT_EQ(read_placement(params(nullptr, nullptr, nullptr, "compute_type=bf16")).compute_type,
              ComputeType::BF16);
    EXPECT_EQ(read_placement(
                  params(nullptr, nullptr, nullptr, "chroma_use_dit_mask=false,compute_type=f32"))
                  .compute_type,
              ComputeType::F32);
    EXPECT_EQ(read_placement(params(nullptr, nullptr, nullptr, "compute_type=auto")).compute_type,
              ComputeType::Auto);
    EXPECT_NO_THROW(read_placement(params(nullptr, nullptr, nullptr, "chroma_t5_mask_pad=2")));
    EXPECT_THROW(read_placement(params(nullptr, nullptr, nullptr, "compute_type=fp8")), Error);
    EXPECT_THROW(read_placement(params(nullptr, nullptr, nullptr, "bogus=1")), Error);
    EXPECT_THROW(read_placement(params(nullptr, nullptr, nullptr, "compute_type")), Error);
}

// Chroma's three keys reach the loader; without them, the reference's defaults (DiT mask on,
// T5 mask off, one padding token attended); a bad value is refused naming its key.
// Qwen-Image-Edit-2511's switch reaches the loader; a bad value is named.
TEST(Placement, ModelArgsCarryQwenImagesZeroCondT) {
    EXPECT_FALSE(read_placement(params(nullptr, nullptr, nullptr)).qwen_image_zero_cond_t);
    EXPECT_TRUE(read_placement(params(nullptr, nullptr, nullptr, "qwen_image_zero_cond_t=true"))
                    .qwen_image_zero_cond_t);
    const std::string error = test::error_of(
        [&] { read_placement(params(nullptr, nullptr, nullptr, "qwen_image_zero_cond_t=2")); });
    EXPECT_NE(error.find("qwen_image_zero_cond_t"), std::string::npos) << error;
}

TEST(Placement, ModelArgsCarryChromasSwitches) {
    const ChromaOptions defaults = read_placement(params(nullptr, nullptr, nullptr)).chroma;
    EXPECT_TRUE(defaults.dit_mask);
    EXPECT_FALSE(defaults.t5_mask);
    EXPECT_EQ(defaults.t5_mask_pad, 1);
    const ChromaOptions set =
        read_placement(
            params(nullptr, nullptr, nullptr,
                   "chroma_use_dit_mask=false, chroma_use_t5_mask=1,chroma_t5_mask_pad=3"))
            .chroma;
    EXPECT_FALSE(set.dit_mask);
    EXPECT_TRUE(set.t5_mask);
    EXPECT_EQ(set.t5_mask_pad, 3);
    EXPECT_EQ(read_placement(params(nullptr, nullptr, nullptr, "chroma_t5_mask_pad=0"))
                  .chroma.t5_mask_pad,
              0);
    for (const char* bad :
         {"chroma_use_dit_mask=maybe", "chroma_use_t5_mask=", "chroma_t5_mask_pad=-1",
          "chroma_t5_mask_pad=1.5", "chroma_t5_mask_pad=99999999999", "chroma_t5_mask_pad=x"}) {
        const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
        const std::string error =
            test::error_of([&] { read_placement(params(nullptr, nullptr, nullptr, bad)); });
        EXPECT_NE(error.find(key), std::string::npos) << bad << ": " << error;
    }
}

// sd_ctx_ext_params_t's fields, when set, win over the same model_args keys.
TEST(Placement, TypedOptionsWinOverModelArgs) {
    sd_ctx_ext_params_t ext;
    sd_ctx_ext_params_init(&ext);
    const Placement from_args =
        read_placement(params(nullptr, nullptr, nullptr, "compute_type=bf16,tokenizer_dir=/t"));
    EngineOptions o = engine_options(from_args, ext);
    EXPECT_EQ(o.compute_type, ComputeType::BF16);
    EXPECT_EQ(o.tokenizer_dir, "/t");
    EXPECT_EQ(o.max_prompt_tokens, SD_DEFAULT_MAX_PROMPT_TOKENS);
    ext.compute_type = SD_COMPUTE_TYPE_F32;
    ext.tokenizer_dir = "/a,b/tok";
    ext.max_prompt_tokens = -3;
    o = engine_options(from_args, ext);
    EXPECT_EQ(o.compute_type, ComputeType::F32);
    EXPECT_EQ(o.tokenizer_dir, "/a,b/tok");
    EXPECT_EQ(o.max_prompt_tokens, 0);  // no limit
    ext.compute_type = SD_COMPUTE_TYPE_AUTO;
    EXPECT_EQ(engine_options(from_args, ext).compute_type, ComputeType::Auto);
    ext.compute_type = static_cast<sd_compute_type_t>(-1);
    EXPECT_THROW(engine_options(from_args, ext), Error);
}

TEST(Placement, DevicesListTheCpuThenTheVulkanDevices) {
    const std::vector<Device> devices = list_devices();
    const gpu::DeviceList& vulkan = gpu::vulkan_devices();
    ASSERT_EQ(devices.size(), 1 + vulkan.devices.size());
    EXPECT_EQ(devices[0].name, "CPU");
    for (size_t i = 0; i < vulkan.devices.size(); ++i)
        EXPECT_EQ(devices[1 + i].name, "vulkan" + std::to_string(i));
    // Without any, the reason is one line (a build without Vulkan says so).
    if (vulkan.devices.empty()) {
        EXPECT_FALSE(vulkan.unavailable.empty());
        EXPECT_EQ(vulkan.unavailable.find('\n'), std::string::npos);
    }
    EXPECT_TRUE(is_cpu_device("cpu"));
    EXPECT_TRUE(is_cpu_device("CPU"));
    EXPECT_FALSE(is_cpu_device("cuda0"));
}

TEST(Placement, BackendPutsTheDiffusionModelAndTheVaeOnAVulkanDevice) {
    // Where the machine has a Vulkan device (lavapipe in CI) it is used; where it has none, a
    // Vulkan name runs on the CPU (said in one line), and any other name is refused.
    const bool vulkan = !gpu::vulkan_devices().devices.empty();
    const std::string dev = vulkan ? "vulkan0" : "";
    Placement all = read_placement(params("vulkan0", nullptr, nullptr, nullptr));
    EXPECT_EQ(all.devices.diffusion, dev);
    EXPECT_EQ(all.devices.vae, dev);
    EXPECT_EQ(all.devices.weight_budget, 0u);
    Placement mixed =
        read_placement(params("diffusion=Vulkan0,te=cpu,vae=cpu", nullptr, "0.5", nullptr));
    EXPECT_EQ(mixed.devices.diffusion, dev);
    EXPECT_EQ(mixed.devices.vae, "");
    EXPECT_TRUE(mixed.keep_vae);
    EXPECT_EQ(mixed.devices.weight_budget, vulkan ? (uint64_t{1} << 29) : 0u);
    // A bare cpu after a device puts everything back.
    EXPECT_EQ(read_placement(params("vulkan0,cpu", nullptr, nullptr, nullptr)).devices.vae, "");
    try {
        read_placement(params("diffusion=cuda0", nullptr, nullptr, nullptr));
        ADD_FAILURE() << "cuda0 accepted";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("backend: device 'cuda0' does not exist"), std::string::npos) << m;
        if (!vulkan) {
            EXPECT_NE(m.find("no Vulkan: "), std::string::npos) << m;
        }
    }
}

}  // namespace
}  // namespace sd::api
