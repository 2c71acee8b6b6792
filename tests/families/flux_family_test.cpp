// The FLUX family on full-size layouts whose data is a hole (sparse files from the fixture
// manifests): dev and schnell told apart by guidance_in, Fill and Canny / Depth by img_in's
// width, and text encoders given to the
// wrong option (an SD CLIP as --t5xxl, a T5 as --clip_l) named in the error.
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

TEST(FluxFamily, DevAndSchnellFromGuidanceIn) {
    ModelFiles dev;
    dev.add(sparse("flux_dev_d2s2", "flux_dev"), ModelRole::DiffusionModel);
    EXPECT_EQ(detect_family(dev).variant, "FLUX.1-dev");
    ModelFiles schnell;
    schnell.add(sparse("flux_dev_d2s2", "flux_schnell", "--drop-prefix guidance_in."),
                ModelRole::DiffusionModel);
    EXPECT_EQ(detect_family(schnell).variant, "FLUX.1-schnell");
    EXPECT_EQ(std::string(detect_family(schnell).family->name), "FLUX");
}

TEST(FluxFamily, DefaultsAreEulerOnTheFluxSchedule) {
    // The reference's sd-cli without --sampling-method / --scheduler on a FLUX model: euler on
    // the flux schedule, whose mu follows the latent's pixel count (1024 at 256x256).
    ModelFiles dev;
    dev.add(sparse("flux_dev_d2s2", "flux_dev"), ModelRole::DiffusionModel);
    const FamilyDefaults d = detect_family(dev).family->defaults;
    EXPECT_EQ(d.method, EULER_SAMPLE_METHOD);
    EXPECT_EQ(d.scheduler, FLUX_SCHEDULER);
    ModelComponents m;
    m.latent.factor = 8;
    EXPECT_EQ(latent_tokens(m.latent, 256, 256), 1024);
    EXPECT_EQ(latent_tokens(m.latent, 320, 256), 1280);
}

TEST(FluxFamily, FillAndControlModelsFromImgInWidth) {
    // img_in's input width, as the reference's model detection: Fill 384 (latent, masked-image
    // latent and 8x8 mask cells as 2x2 patches), Canny / Depth 128 (latent and control latent).
    auto variant = [](const char* name, const char* width) {
        ModelFiles files;
        files.add(sparse("flux_dev_d2s2", name, std::string("--shape img_in.weight=3072,") + width),
                  ModelRole::DiffusionModel);
        return detect_family(files).variant;
    };
    EXPECT_EQ(variant("flux_fill", "384"), "FLUX.1 Fill");
    EXPECT_EQ(variant("flux_canny", "128"), "FLUX.1 Canny/Depth");
    EXPECT_EQ(variant("flux_flex2", "196"), "Flex.2");
    EXPECT_EQ(variant("flux_plain", "64"), "FLUX.1-dev");
}

TEST(FluxFamily, Flex2IsRefusedByName) {
    ModelFiles files;
    files.add(sparse("flux_dev_d2s2", "flux_flex2_load", "--shape img_in.weight=3072,196"),
              ModelRole::DiffusionModel);
    files.add(sparse("flux_ae", "flux_ae_for_flex2"), ModelRole::Vae);
    files.add(sparse("clip_l", "clip_l_for_flex2"), ModelRole::TextEncoder);
    files.add(sparse("t5xxl_l2", "t5_for_flex2"), ModelRole::T5);
    const std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("Flex.2 models are not supported"), std::string::npos) << error;
}

TEST(FluxFamily, TextEncoderUnderTheWrongOptionIsNamed) {
    const std::string flux = sparse("flux_dev_d2s2", "flux_mixed");
    const std::string vae = sparse("flux_ae", "flux_ae_sparse");
    const std::string clip = sparse("clip_l", "clip_l_sparse");
    const std::string t5 = sparse("t5xxl_l2", "t5_sparse");
    {
        ModelFiles files;  // an SD CLIP given as --t5xxl
        files.add(flux, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        files.add(clip, ModelRole::TextEncoder);
        files.add(clip, ModelRole::T5);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
    }
    {
        ModelFiles files;  // a T5 given as --clip_l
        files.add(flux, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        files.add(t5, ModelRole::TextEncoder);
        files.add(t5, ModelRole::T5);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--clip_l"), std::string::npos) << error;
    }
    {
        ModelFiles files;  // no T5 at all
        files.add(flux, ModelRole::DiffusionModel);
        files.add(vae, ModelRole::Vae);
        files.add(clip, ModelRole::TextEncoder);
        const std::string error = test::error_of([&] { load_model(files, options()); });
        EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
    }
}

}  // namespace
}  // namespace sd
