// The Qwen-Image family on full-size layouts whose data is a hole (sparse files from the
// fixture manifests): detected, assembled from its three files with the reference's defaults
// (the Wan VAE's per-channel statistics, flow shift 3, euler / discrete), Edit-2511's
// zero_cond_t from --model-args, and a wrong or missing text encoder named with --llm.
#include <gtest/gtest.h>

#include "families/family_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;

struct QwenImageFiles {
    std::string dit = sparse("qwen_image_d2", "qwen_image_dit");
    std::string llm = sparse("qwen2_5_vl_7b_l2_vis2", "qwen_image_llm");
    std::string vae = sparse("wan21_vae", "qwen_image_vae");
};

const QwenImageFiles& files_once() {
    static const QwenImageFiles f;
    return f;
}

ModelFiles qwen_image_files(const std::string& llm) {
    ModelFiles files;
    files.add(files_once().dit, ModelRole::DiffusionModel);
    if (!llm.empty()) files.add(llm, ModelRole::Llm);
    files.add(files_once().vae, ModelRole::Vae);
    return files;
}

TEST(QwenImageFamily, Detected) {
    ModelFiles f;
    f.add(files_once().dit, ModelRole::DiffusionModel);
    EXPECT_EQ(detect_family(f).variant, "Qwen-Image");
    EXPECT_TRUE(detect_family(f).runnable());
}

TEST(QwenImageFamily, AssemblesWithTheReferenceDefaults) {
    LoadedModel m = load_model(qwen_image_files(files_once().llm), test::family_test_options());
    EXPECT_EQ(m.components.family_name, "Qwen-Image");
    EXPECT_EQ(m.family->defaults.method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(m.family->defaults.scheduler, DISCRETE_SCHEDULER);
    EXPECT_TRUE(m.components.denoiser->is_flow());
    const LatentFormat& f = m.components.latent;
    EXPECT_EQ(f.channels, 16);
    ASSERT_TRUE(f.per_channel());
    EXPECT_FLOAT_EQ(f.mean[0], -0.7571f);
    EXPECT_FLOAT_EQ(f.std[15], 1.9160f);
    EXPECT_EQ(m.components.diffusion->in_channels(), 16);
    EXPECT_EQ(m.components.diffusion->cache_target(), CacheTarget::DiT);
    // The Edit models' reference images need the vision tower: not taken yet.
    EXPECT_FALSE(m.components.ref_images.supported);
    // The template's 34 dropped tokens are still counted for the prompt limit.
    EXPECT_GT(m.components.conditioner->count_tokens("a cat"), 34u);
}

TEST(QwenImageFamily, AnLlmOfAnotherWidthIsNamed) {
    const std::string qwen3 = sparse("qwen3_4b_l36", "qwen_image_qwen3");
    const std::string error =
        test::error_of([&] { load_model(qwen_image_files(qwen3), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find(qwen3), std::string::npos) << error;
    EXPECT_NE(error.find("3584"), std::string::npos) << error;
}

TEST(QwenImageFamily, AMissingLlmIsNamed) {
    const std::string error =
        test::error_of([&] { load_model(qwen_image_files(""), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find("Qwen2.5-VL"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
