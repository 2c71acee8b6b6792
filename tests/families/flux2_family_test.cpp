// The FLUX.2 family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): klein told from FLUX.2-dev (all 48 single blocks) and from FLUX.1, assembled
// from its three files with the reference's defaults (euler on the flux2 schedule, 128
// patched latent channels at factor 16 with per-channel statistics), dev refused by name, and
// a VAE of another latent width or an LLM of another width named.
#include <gtest/gtest.h>

#include "families/family_test_util.h"
#include "families/parts/kl_vae.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;

struct Flux2Files {
    std::string dit = sparse("flux2_klein_4b_d2s2", "flux2_dit");
    std::string llm = sparse("qwen3_4b_l36", "flux2_qwen3");
    std::string vae = sparse("flux2_ae", "flux2_vae");
};

const Flux2Files& files_once() {
    static const Flux2Files f;
    return f;
}

ModelFiles flux2_files(const std::string& dit, const std::string& vae) {
    ModelFiles files;
    files.add(dit, ModelRole::DiffusionModel);
    files.add(files_once().llm, ModelRole::Llm);
    files.add(vae, ModelRole::Vae);
    return files;
}

std::string variant_of(const std::string& dit) {
    ModelFiles files;
    files.add(dit, ModelRole::DiffusionModel);
    return detect_family(files).variant;
}

// FLUX.2-dev: the shared modulations and a 48th single block.
const std::string& dev_dit() {
    static const std::string path = sparse("flux2_klein_4b_d2s2", "flux2_dev_like",
                                           "--rename single_blocks.1.linear1.weight="
                                           "single_blocks.47.linear1.weight");
    return path;
}

TEST(Flux2Family, KleinDevAndFlux1ToldApart) {
    EXPECT_EQ(variant_of(files_once().dit), "FLUX.2-klein");
    EXPECT_EQ(variant_of(dev_dit()), "FLUX.2-dev");
    EXPECT_EQ(variant_of(sparse("flux_dev_d2s2", "flux2_test_flux1")), "FLUX.1-dev");
}

TEST(Flux2Family, AssemblesWithTheReferenceDefaults) {
    LoadedModel m =
        load_model(flux2_files(files_once().dit, files_once().vae), test::family_test_options());
    EXPECT_EQ(m.components.family_name, "FLUX.2-klein");
    EXPECT_EQ(m.family->defaults.method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(m.family->defaults.scheduler, FLUX2_SCHEDULER);
    EXPECT_TRUE(m.components.denoiser->is_flow());
    const LatentFormat& f = m.components.latent;
    EXPECT_EQ(f.channels, 128);
    EXPECT_EQ(f.factor, 16);
    EXPECT_EQ(f.patch, 2);
    EXPECT_EQ(f.codec_channels(), 32);
    ASSERT_TRUE(f.per_channel());
    EXPECT_FLOAT_EQ(f.mean[0], -0.0676f);
    EXPECT_FLOAT_EQ(f.std[127], 1.7530f);
    EXPECT_EQ(m.components.diffusion->in_channels(), 128);
    EXPECT_TRUE(m.components.ref_images.supported);
    EXPECT_EQ(m.components.ref_images.preset, "flux2");
    // The template alone: "<|im_start|>user\n" + "<|im_end|>\n<|im_start|>assistant\n<think>
    // \n\n</think>\n\n" (the padding to 512 is not counted).
    EXPECT_EQ(m.components.conditioner->count_tokens(""), 12u);
}

// The VAE's 2x2 patches folded into channels c * 4 + i * 2 + j, each normalised as
// (z - mean) / std, by hand; and back.
TEST(Flux2Family, LatentPatchesAndStatistics) {
    ModelFiles files;
    files.add(files_once().dit, ModelRole::DiffusionModel);
    const LatentFormat& f = detect_family(files).family->latent;
    std::vector<float> z(32 * 2 * 4);  // [1, 32, 2, 4]: two patches side by side
    for (size_t k = 0; k < z.size(); ++k) z[k] = 0.01f * static_cast<float>(k) - 1.0f;
    const Tensor codec = Tensor::from_vector({1, 32, 2, 4}, z);
    const Tensor model = to_model_latent(f, codec);
    ASSERT_EQ(model.shape(), (Shape{1, 128, 1, 2}));
    const std::vector<float> got = model.to_vector();
    for (int c : {0, 5, 31}) {
        for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) {
                for (int px = 0; px < 2; ++px) {  // patch column
                    const int ch = c * 4 + i * 2 + j;
                    const float v = z[static_cast<size_t>((c * 2 + i) * 4 + px * 2 + j)];
                    EXPECT_NEAR(got[static_cast<size_t>(ch * 2 + px)], (v - f.mean[ch]) / f.std[ch],
                                1e-6)
                        << c << " " << i << " " << j << " " << px;
                }
            }
        }
    }
    test::expect_close(to_codec_latent(f, model), codec, 1e-6, 1e-6, "round trip");
}

TEST(Flux2Family, VaeQuantConvsAreRead) {
    LoadedModel m =
        load_model(flux2_files(files_once().dit, files_once().vae), test::family_test_options());
    const auto* vae = dynamic_cast<const KlVaeCodec*>(m.components.codec.get());
    ASSERT_NE(vae, nullptr);
    EXPECT_EQ(vae->vae().config().z_channels, 32);
    EXPECT_TRUE(vae->vae().config().has_quant_conv);  // encoder.quant_conv, decoder.post_quant_conv
}

TEST(Flux2Family, DevIsRefusedByName) {
    const std::string error = test::error_of(
        [&] { load_model(flux2_files(dev_dit(), files_once().vae), test::family_test_options()); });
    EXPECT_NE(error.find("FLUX.2-dev"), std::string::npos) << error;
}

TEST(Flux2Family, AVaeOfAnotherWidthIsNamed) {
    const std::string vae = sparse("flux_ae", "flux2_test_flux1_vae");
    const std::string error = test::error_of(
        [&] { load_model(flux2_files(files_once().dit, vae), test::family_test_options()); });
    EXPECT_NE(error.find("32"), std::string::npos) << error;
    EXPECT_NE(error.find(vae), std::string::npos) << error;
}

TEST(Flux2Family, AnLlmOfAnotherWidthIsNamed) {
    // A DiT reading 3 x 3072-wide states against Qwen3-4B's 2560.
    const std::string dit =
        sparse("flux2_klein_4b_d2s2", "flux2_dit_9216", "--shape txt_in.weight=3072,9216");
    const std::string error = test::error_of(
        [&] { load_model(flux2_files(dit, files_once().vae), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find("2560 wide"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
