// The Z-Image family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): told apart from Lumina 2, assembled from its three files with the reference's
// defaults, and each wrong text encoder (a Qwen2.5-VL, an LLM of another width, a CLIP as
// --llm) refused in one line naming the file and --llm, and the built-in vocabulary taken when
// no file has one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "families/family_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;

struct ZImageFiles {
    std::string dit = sparse("zimage_turbo_d2", "zimage_dit");
    std::string llm = sparse("qwen3_4b_l36", "zimage_qwen3");
    std::string vae = sparse("flux_ae", "zimage_vae");
};

const ZImageFiles& files_once() {
    static const ZImageFiles f;
    return f;
}

ModelFiles z_image_files(const std::string& llm) {
    ModelFiles files;
    files.add(files_once().dit, ModelRole::DiffusionModel);
    files.add(llm, ModelRole::Llm);
    files.add(files_once().vae, ModelRole::Vae);
    return files;
}

// The error's first line names `file` and --llm (a vocabulary search lists the places it
// looked on the lines after it).
void expect_llm_error(const ModelFiles& files, const std::string& file, const std::string& what,
                      const LoadOptions& options = test::family_test_options()) {
    std::string error = test::error_of([&] { load_model(files, options); });
    error = error.substr(0, error.find('\n'));
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find(file), std::string::npos) << error;
    EXPECT_NE(error.find(what), std::string::npos) << error;
}

TEST(ZImageFamily, ToldApartFromLumina2) {
    ModelFiles z;
    z.add(files_once().dit, ModelRole::DiffusionModel);
    EXPECT_EQ(detect_family(z).variant, "Z-Image");
    // Lumina 2's NextDiT: the same blocks, a 1024-wide adaLN input.
    ModelFiles lumina;
    lumina.add(sparse("zimage_turbo_d2", "lumina2_like",
                      "--shape t_embedder.mlp.2.weight=1024,1024 --shape "
                      "t_embedder.mlp.2.bias=1024"),
               ModelRole::DiffusionModel);
    EXPECT_EQ(detect_family(lumina).variant, "Lumina 2");
}

TEST(ZImageFamily, AssemblesWithTheReferenceDefaults) {
    LoadedModel m = load_model(z_image_files(files_once().llm), test::family_test_options());
    EXPECT_EQ(m.components.family_name, "Z-Image");
    EXPECT_EQ(m.family->defaults.method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(m.family->defaults.scheduler, DISCRETE_SCHEDULER);
    EXPECT_TRUE(m.components.denoiser->is_flow());
    EXPECT_EQ(m.components.latent.channels, 16);
    EXPECT_FLOAT_EQ(m.components.latent.scale, 0.3611f);
    EXPECT_FLOAT_EQ(m.components.latent.shift, 0.1159f);
    EXPECT_EQ(m.components.diffusion->in_channels(), 16);
    EXPECT_FALSE(m.components.ref_images.supported);
    // The template's tokens are counted for the prompt limit.
    EXPECT_GT(m.components.conditioner->count_tokens("a cat"), 8u);
}

TEST(ZImageFamily, AVisionLanguageModelAsLlmIsNamed) {
    const std::string vl = sparse("qwen2_5_vl_7b_l2_vis2", "zimage_qwen25vl");
    expect_llm_error(z_image_files(vl), vl, "Qwen2.5-VL");
}

TEST(ZImageFamily, AnLlmOfAnotherWidthIsNamed) {
    // A DiT reading 3072-wide states (no such Qwen3 ships) against Qwen3-4B's 2560.
    const std::string dit = sparse("zimage_turbo_d2", "zimage_dit_3072",
                                   "--shape cap_embedder.0.weight=3072 --shape "
                                   "cap_embedder.1.weight=3840,3072");
    ModelFiles files;
    files.add(dit, ModelRole::DiffusionModel);
    files.add(files_once().llm, ModelRole::Llm);
    files.add(files_once().vae, ModelRole::Vae);
    expect_llm_error(files, files_once().llm, "2560 wide");
}

TEST(ZImageFamily, AClipAsLlmIsNamed) {
    const std::string clip = sparse("clip_l", "zimage_clip_as_llm");
    expect_llm_error(z_image_files(clip), clip, "LLM");
}

TEST(ZImageFamily, NoVocabularyFileTakesTheBuiltInOne) {
    // No tokenizer files and no GGUF metadata: the Qwen2 vocabulary built into the binary (the
    // search's not-found message, with every place, is tested in the tokenizer's tests).
    ::unsetenv("SD_TOKENIZER_DIR");
    LoadOptions options = test::family_test_options();
    options.tokenizer_dir = testing::TempDir() + "/no_tokenizers_here";
    test::run_or_fail("mkdir -p " + options.tokenizer_dir);
    LoadedModel m = load_model(z_image_files(files_once().llm), options);
    // The template alone: "<|im_start|>user\n" + "<|im_end|>\n<|im_start|>assistant\n".
    EXPECT_EQ(m.components.conditioner->count_tokens(""), 8u);
}

}  // namespace
}  // namespace sd
