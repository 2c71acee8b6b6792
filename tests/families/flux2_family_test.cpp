// The FLUX.2 family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): klein told from FLUX.2-dev (all 48 single blocks) and from FLUX.1, assembled
// from its three files with the reference's defaults (euler on the flux2 schedule, 128
// patched latent channels at factor 16 with per-channel statistics), FLUX.2-dev assembled with
// Mistral-Small-3.2 at their real layouts, and a VAE of another latent width, an LLM of
// another width or a missing Mistral vocabulary named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "conditioners/llm_text_conditioner.h"
#include "families/family_test_util.h"
#include "families/parts/kl_vae.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/flux2.h"
#include "test_util.h"
#include "tokenizer/tiny_mistral_vocabulary.h"

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

// FLUX.2-dev at its real layout (32 B DiT, Mistral-Small-3.2-24B; sparse files of
// tests/families/manifests) with a tekken.json made by the test in DIR/mistral/.
struct DevFiles {
    std::string dit = sparse(test::local_manifest("flux2_dev"), "flux2_dev_dit");
    std::string llm = sparse(test::local_manifest("mistral_small_3_2_24b"), "flux2_dev_mistral");
    std::string tokenizers = test::temp_path("flux2_dev_tokenizers");
    DevFiles() {
        std::filesystem::create_directories(tokenizers + "/mistral");
        std::ofstream(tokenizers + "/mistral/tekken.json") << test::tiny_tekken_json();
    }
};

const DevFiles& dev_once() {
    static const DevFiles f;
    return f;
}

ModelFiles dev_files(const std::string& llm) {
    ModelFiles files;
    files.add(dev_once().dit, ModelRole::DiffusionModel);
    files.add(llm, ModelRole::Llm);
    files.add(files_once().vae, ModelRole::Vae);
    return files;
}

LoadOptions dev_options() {
    LoadOptions o = test::family_test_options();
    o.tokenizer_dir = dev_once().tokenizers;
    return o;
}

TEST(Flux2Family, DevAssemblesWithMistral) {
    EXPECT_EQ(variant_of(dev_once().dit), "FLUX.2-dev");
    LoadedModel m = load_model(dev_files(dev_once().llm), dev_options());
    EXPECT_EQ(m.components.family_name, "FLUX.2-dev");
    const auto* conditioner =
        dynamic_cast<const LlmTextConditioner*>(m.components.conditioner.get());
    ASSERT_NE(conditioner, nullptr);
    const LlmConfig& llm = conditioner->llm().config();
    EXPECT_EQ(llm.width, 5120);
    EXPECT_EQ(llm.layers, 40);
    EXPECT_EQ(llm.heads, 32);
    EXPECT_EQ(llm.kv_heads, 8);
    EXPECT_EQ(llm.head_dim, 128);
    EXPECT_FLOAT_EQ(llm.eps, 1e-5f);
    EXPECT_FLOAT_EQ(llm.rope_theta, 1e9f);
    EXPECT_FALSE(llm.qk_norm);
    // <s>, [SYSTEM_PROMPT] ... [/SYSTEM_PROMPT][INST], the prompt, [/INST].
    std::vector<int32_t> ids;
    std::vector<float> weights;
    conditioner->tokenize("hello world", ids, weights);
    ASSERT_GT(ids.size(), 8u);
    EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 2), (std::vector<int32_t>{1, 17}));
    EXPECT_EQ(std::vector<int32_t>(ids.end() - 5, ids.end()),
              (std::vector<int32_t>{18, 3, 1259, 1264, 4}));
    EXPECT_EQ(weights.size(), ids.size());
    EXPECT_EQ(m.components.diffusion->in_channels(), 128);
    ModelFiles dit_file;
    dit_file.add(dev_once().dit, ModelRole::DiffusionModel);
    const Flux2Config dit = Flux2Model::load(Weights(dit_file, "model.diffusion_model.")).config();
    EXPECT_TRUE(dit.guidance_embed);
    EXPECT_EQ(dit.depth, 8);
    EXPECT_EQ(dit.depth_single, 48);
    EXPECT_EQ(dit.hidden, 6144);
    EXPECT_EQ(dit.heads, 48);
    EXPECT_EQ(dit.context_dim, 15360);
    EXPECT_EQ(m.family->defaults.scheduler, FLUX2_SCHEDULER);
}

TEST(Flux2Family, DevWithQwen3IsNamed) {
    const std::string error =
        test::error_of([&] { load_model(dev_files(files_once().llm), dev_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find("FLUX.2-dev"), std::string::npos) << error;
    EXPECT_NE(error.find("Mistral-Small-3.2"), std::string::npos) << error;
}

TEST(Flux2Family, DevWithoutAMistralVocabularyIsNamed) {
    const std::string error =
        test::error_of([&] { load_model(dev_files(dev_once().llm), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find("no Mistral tokenizer vocabulary"), std::string::npos) << error;
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
