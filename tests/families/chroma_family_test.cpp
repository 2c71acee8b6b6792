// The Chroma family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): Chroma told from FLUX.1-schnell (whose blocks it shares) by its distilled
// guidance layer, Chroma-Radiance (pixel-space) recognised and refused by name, the
// reference's defaults, and the text encoder checks naming their option.
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

// Chroma-Radiance's names over Chroma's layout: its pixel-patch input and NeRF decoder.
std::string radiance() {
    return sparse("chroma_d2s2", "chroma_radiance",
                  "--rename img_in.weight=img_in_patch.weight "
                  "--rename final_layer.linear.weight=nerf_final_layer_conv.conv.weight");
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

TEST(ChromaFamily, RadianceIsRefusedByName) {
    ModelFiles files;
    files.add(radiance(), ModelRole::DiffusionModel);
    files.add(sparse("t5xxl_l2", "t5_for_radiance"), ModelRole::T5);
    const std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("Chroma-Radiance model, which this program cannot run yet"),
              std::string::npos)
        << error;
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
