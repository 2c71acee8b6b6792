// The Qwen-Image family on full-size layouts whose data is a hole (sparse files from the
// fixture manifests): detected, assembled from its three files with the reference's defaults
// (the Wan VAE's per-channel statistics, flow shift 3, euler / discrete), Edit-2511's
// zero_cond_t from --model-args, a wrong or missing text encoder named with --llm; the Edit
// template's token layout by hand; the vision tower in the LLM file or apart, and an edit
// without one refused by name; the Wan VAE's decode footprint.
#include <gtest/gtest.h>

#include <algorithm>

#include "conditioners/llm_text_conditioner.h"
#include "families/family_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "pipeline/decode_tiling.h"
#include "pipeline/generate.h"
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
    // The LLM file holds the vision tower: reference images go to the prompt and the DiT.
    EXPECT_TRUE(m.components.ref_images.supported);
    EXPECT_TRUE(m.components.ref_images.vlm);
    EXPECT_EQ(m.components.ref_images.preset, "qwen");
    EXPECT_EQ(m.components.ref_images.size_multiple, 32);
    // The template's 34 dropped tokens are still counted for the prompt limit.
    EXPECT_GT(m.components.conditioner->count_tokens("a cat"), 34u);
}

// The Wan VAE holds ~8.6 KB a pixel decoding an image (3x the KL VAE): the streamed mode decodes
// a 1024x1024 image in tiles of 44 latent pixels (352 px, ~1.1 GB each), not whole (8.4 GiB).
TEST(QwenImageFamily, TheStreamedModeDecodesInTilesForTheWanVae) {
    LoadedModel m = load_model(qwen_image_files(files_once().llm), test::family_test_options());
    EXPECT_DOUBLE_EQ(m.components.footprint.decode_per_pixel, 8600);
    m.components.memory.residency = Residency::Streamed;
    const VaeTiling t = decode_tiling(m.components, {}, 128, 128);
    EXPECT_TRUE(t.enabled);
    EXPECT_EQ(t.tile_size, 44);
    EXPECT_FALSE(decode_tiling(m.components, {}, 40, 40).enabled);
}

TEST(QwenImageFamily, AnLlmOfAnotherWidthIsNamed) {
    const std::string qwen3 = sparse("qwen3_4b_l36", "qwen_image_qwen3");
    const std::string error =
        test::error_of([&] { load_model(qwen_image_files(qwen3), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find(qwen3), std::string::npos) << error;
    EXPECT_NE(error.find("3584"), std::string::npos) << error;
}

const LlmTextConditioner& llm_conditioner(const LoadedModel& m) {
    const auto* c = dynamic_cast<const LlmTextConditioner*>(m.components.conditioner.get());
    if (!c) fail("the Qwen-Image conditioner is no LlmTextConditioner");
    return *c;
}

// The Edit template by hand: the reference's system turn and user header are the 64 tokens
// dropped; picture N follows as "Picture N: <|vision_start|>" ([24669, 220, N, 25, 220,
// 151652]), its pad tokens (151655) where the embeddings go, <|vision_end|> (151653); then the
// user's text. The reference splices picture 1 at 64 + 6 and each next one 1 + n + 6 later.
TEST(QwenImageFamily, TheEditTemplatePlacesEachPicture) {
    LoadedModel m = load_model(qwen_image_files(files_once().llm), test::family_test_options());
    const LlmTextConditioner& c = llm_conditioner(m);
    ASSERT_TRUE(c.reads_images());
    std::vector<int32_t> ids;
    std::vector<float> weights;
    std::vector<int64_t> at;
    const std::vector<int64_t> counts = {324, 100};
    c.tokenize_with_pictures("make the cat blue", counts, ids, weights, at);
    ASSERT_EQ(at, (std::vector<int64_t>{70, 70 + 324 + 1 + 6}));
    const std::string dir = test::fixtures_dir() + "/tokenizers/qwen2/";
    const LlmTokenizer vocab =
        LlmTokenizer::from_vocab_merges(dir + "vocab.json", dir + "merges.txt");
    EXPECT_EQ(vocab.decode({ids.begin(), ids.begin() + 64}),
              "<|im_start|>system\nDescribe the key features of the input image (color, shape, "
              "size, texture, objects, background), then explain how the user's text "
              "instruction should alter or modify the image. Generate a new image that meets "
              "the user's requirements while maintaining consistency with the original input "
              "where appropriate.<|im_end|>\n<|im_start|>user\n");
    const std::vector<int32_t> label1 = {24669, 220, 16, 25, 220, 151652};
    const std::vector<int32_t> label2 = {24669, 220, 17, 25, 220, 151652};
    EXPECT_EQ(std::vector<int32_t>(ids.begin() + 64, ids.begin() + 70), label1);
    EXPECT_EQ(std::count(ids.begin() + 70, ids.begin() + 394, 151655), 324);
    EXPECT_EQ(ids[394], 151653);
    EXPECT_EQ(std::vector<int32_t>(ids.begin() + 395, ids.begin() + 401), label2);
    EXPECT_EQ(std::count(ids.begin() + 401, ids.begin() + 501, 151655), 100);
    EXPECT_EQ(ids[501], 151653);
    EXPECT_EQ(vocab.decode({ids.begin() + 502, ids.end()}),
              "make the cat blue<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(ids.size(), weights.size());
    // The text template is the one without images.
    c.tokenize("make the cat blue", ids, weights);
    EXPECT_EQ(vocab.decode({ids.begin() + 34, ids.end()}),
              "make the cat blue<|im_end|>\n<|im_start|>assistant\n");
    // A prompt with pad tokens of its own cannot be spliced: said.
    EXPECT_NE(test::error_of([&] {
                  c.tokenize_with_pictures("<|image_pad|>", counts, ids, weights, at);
              }).find("<|image_pad|>"),
              std::string::npos);
}

ImageRequest edit_request() {
    ImageRequest r;
    r.prompt = "make the cat blue";
    r.width = r.height = 256;
    r.ref_images.push_back(image::Image{64, 64, 3, std::vector<uint8_t>(64 * 64 * 3, 128)});
    return r;
}

TEST(QwenImageFamily, AnEditWithoutAVisionTowerIsNamed) {
    const std::string text_only =
        sparse("qwen2_5_vl_7b_l2_vis2", "qwen_image_llm_text", "--drop-prefix visual.");
    LoadedModel m = load_model(qwen_image_files(text_only), test::family_test_options());
    EXPECT_FALSE(llm_conditioner(m).reads_images());
    const std::string error = test::error_of([&] { settle_request(m.components, edit_request()); });
    EXPECT_NE(error.find("--ref-image"), std::string::npos) << error;
    EXPECT_NE(error.find("vision tower"), std::string::npos) << error;
    EXPECT_NE(error.find(text_only), std::string::npos) << error;
    EXPECT_NE(error.find("--llm_vision"), std::string::npos) << error;
    // Without reference images it is Qwen-Image as ever.
    ImageRequest plain = edit_request();
    plain.ref_images.clear();
    settle_request(m.components, plain);
}

TEST(QwenImageFamily, AVisionTowerGivenApartIsRead) {
    const std::string text_only =
        sparse("qwen2_5_vl_7b_l2_vis2", "qwen_image_llm_text2", "--drop-prefix visual.");
    const std::string tower =
        sparse("qwen2_5_vl_7b_l2_vis2", "qwen_image_tower", "--drop-prefix model.");
    ModelFiles files = qwen_image_files(text_only);
    files.add(tower, ModelRole::LlmVision);
    LoadedModel m = load_model(files, test::family_test_options());
    EXPECT_TRUE(llm_conditioner(m).reads_images());
    EXPECT_TRUE(m.components.ref_images.supported);
    settle_request(m.components, edit_request());
}

TEST(QwenImageFamily, AMissingLlmIsNamed) {
    const std::string error =
        test::error_of([&] { load_model(qwen_image_files(""), test::family_test_options()); });
    EXPECT_NE(error.find("--llm"), std::string::npos) << error;
    EXPECT_NE(error.find("Qwen2.5-VL"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
