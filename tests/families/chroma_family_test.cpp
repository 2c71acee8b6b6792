// The Chroma family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): Chroma told from FLUX.1-schnell (whose blocks it shares) by its distilled
// guidance layer, Chroma-Radiance (pixel-space) recognised and loaded at its released layout
// (no VAE: its codec is the picture in [-1, 1]), the reference's defaults, and the text
// encoder checks naming their option.
#include <gtest/gtest.h>

#include "families/family_test_util.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;
LoadOptions options() {
    return test::family_test_options();
}

DetectedFamily detect(const std::string& path) {
    ModelFiles files;
    files.add(path, ModelRole::DiffusionModel);
    return detect_family(files);
}

// Chroma1-Radiance's layout over Chroma's blocks: the 16x16 pixel-patch input in place of
// img_in, the NeRF head (width 64, 4 blocks, MLP ratio 4, 8 frequencies) in place of
// final_layer, and the x0 marker.
std::string radiance() {
    std::string o =
        "--drop-prefix img_in. --drop-prefix final_layer. "
        "--add img_in_patch.weight=f32:3072,3,16,16 --add img_in_patch.bias=f32:3072 "
        "--add nerf_image_embedder.embedder.0.weight=f32:64,67 "
        "--add nerf_image_embedder.embedder.0.bias=f32:64 "
        "--add nerf_final_layer_conv.norm.scale=f32:64 "
        "--add nerf_final_layer_conv.conv.weight=f32:3,64,3,3 "
        "--add nerf_final_layer_conv.conv.bias=f32:3 --add __x0__=f32";
    for (int i = 0; i < 4; ++i) {
        const std::string b = " --add nerf_blocks." + std::to_string(i) + ".";
        o += b + "param_generator.weight=f32:49152,3072" + b + "param_generator.bias=f32:49152" +
             b + "norm.scale=f32:64";
    }
    return sparse("chroma_d2s2", "chroma_radiance", o);
}

TEST(ChromaFamily, ToldFromSchnellAndRadiance) {
    const DetectedFamily chroma = detect(sparse("chroma_d2s2", "chroma"));
    ASSERT_NE(chroma.family, nullptr);
    EXPECT_EQ(std::string(chroma.family->name), "Chroma");
    EXPECT_EQ(chroma.variant, "Chroma");
    const DetectedFamily schnell =
        detect(sparse("flux_dev_d2s2", "flux_schnell_not_chroma", "--drop-prefix guidance_in."));
    EXPECT_EQ(std::string(schnell.family->name), "FLUX");
    EXPECT_EQ(schnell.variant, "FLUX.1-schnell");
    const DetectedFamily pixels = detect(radiance());
    EXPECT_EQ(std::string(pixels.family->name), "Chroma-Radiance");
}

TEST(ChromaFamily, RadianceLoadsWithoutAVae) {
    ModelFiles files;
    files.add(radiance(), ModelRole::DiffusionModel);
    files.add(sparse("t5xxl_l2", "t5_for_radiance"), ModelRole::T5);
    const LoadedModel loaded = load_model(files, options());
    const ModelComponents& m = loaded.components;
    EXPECT_EQ(m.family_name, "Chroma-Radiance");
    EXPECT_EQ(m.latent.channels, 3);
    EXPECT_EQ(m.latent.factor, 1);
    EXPECT_EQ(m.diffusion->in_channels(), 3);
    EXPECT_FALSE(m.ref_images.supported);
    // The codec: the picture in [-1, 1] and back.
    const std::unique_ptr<Rng> rng = make_std_default_rng(1);
    const Tensor image = Tensor::from_vector({1, 3, 1, 2}, {0.0f, 1.0f, 0.5f, 0.25f, 1.0f, 0.0f});
    const std::vector<float> z = m.codec->encode(image, *rng).to_vector();
    EXPECT_EQ(z, (std::vector<float>{-1.0f, 1.0f, 0.0f, -0.5f, 1.0f, -1.0f}));
    EXPECT_EQ(m.codec->decode(Tensor::from_vector({1, 3, 1, 2}, z), {}).to_vector(), z);
    // Without its T5, named by option.
    ModelFiles no_t5;
    no_t5.add(radiance(), ModelRole::DiffusionModel);
    const std::string error = test::error_of([&] { load_model(no_t5, options()); });
    EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
    EXPECT_NE(error.find("Chroma-Radiance"), std::string::npos) << error;
}

TEST(ChromaFamily, DefaultsAreEulerOnTheFluxSchedule) {
    // The reference treats Chroma as a FLUX model: euler on the flux schedule.
    const FamilyDefaults d = detect(sparse("chroma_d2s2", "chroma")).family->defaults;
    EXPECT_EQ(d.method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(d.scheduler, FLUX_SCHEDULER);
}

TEST(ChromaFamily, TextEncodersAreNamedByTheirOption) {
    const std::string chroma = sparse("chroma_d2s2", "chroma");
    const std::string vae = sparse("flux_ae", "flux_ae_for_chroma");
    const std::string clip = sparse("clip_l", "clip_l_for_chroma");
    const std::string t5 = sparse("t5xxl_l2", "t5_for_chroma");
    {
        ModelFiles files;  // a CLIP given as --t5xxl
        files.add(chroma, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        files.add(clip, ModelRole::T5);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
        EXPECT_NE(error.find("holds no T5 encoder"), std::string::npos) << error;
    }
    {
        ModelFiles files;  // no T5 at all
        files.add(chroma, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
    }
    {
        ModelFiles files;  // a CLIP-L as FLUX takes it: Chroma has none
        files.add(chroma, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        files.add(t5, ModelRole::T5);
        files.add(clip, ModelRole::TextEncoder);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--clip_l"), std::string::npos) << error;
    }
}

}  // namespace
}  // namespace sd
