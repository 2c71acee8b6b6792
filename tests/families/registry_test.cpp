// Family detection and loading on full-size layouts whose data is a hole (sparse files made
// by tests/tools/write_sparse_checkpoint.py from the fixture manifests): which family each
// layout is, the errors for unknown layouts, families not built yet and broken SDXL files,
// and the SDXL conditioner's size vector against values computed here.
#include "families/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "families/family_test_util.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "test_util.h"

namespace sd {
namespace {

using test::sparse;
LoadOptions options() {
    return test::family_test_options();
}

std::string variant_of(const std::string& path, ModelRole role = ModelRole::Checkpoint) {
    ModelFiles files;
    files.add(path, role);
    return detect_family(files).variant;
}

TEST(FamilyRegistry, DetectsEachLayout) {
    EXPECT_EQ(variant_of(sparse("sd15", "sd15")), "SD 1.x");
    EXPECT_EQ(variant_of(sparse("sd21", "sd21")), "SD 2.x");
    EXPECT_EQ(variant_of(sparse("sdxl", "sdxl")), "SDXL");
    EXPECT_EQ(variant_of(sparse("sdxl", "sdxl_inpaint",
                                "--shape model.diffusion_model.input_blocks.0.0.weight=320,9,3,3")),
              "SDXL inpaint");
    EXPECT_EQ(variant_of(sparse("sd3_medium", "sd3"), ModelRole::DiffusionModel), "SD3 medium");
    EXPECT_EQ(variant_of(sparse("flux_dev_d2s2", "flux"), ModelRole::DiffusionModel), "FLUX.1-dev");
    for (const Family* f : families()) EXPECT_NE(f->detect, nullptr) << f->name;
}

TEST(FamilyRegistry, UnknownLayoutNamesTheFamiliesTried) {
    std::string path = test::temp_path("unknown.safetensors");
    write_safetensors(path, {{"foo.weight", DType::F32, Shape{4, 4}, [] {
                                  return Tensor::zeros({4, 4});
                              }}});
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("no known model layout"), std::string::npos) << error;
    for (const Family* f : families()) EXPECT_NE(error.find(f->name), std::string::npos) << error;
}

TEST(FamilyRegistry, EachFamilyDeclaresItsRolesOnce) {
    for (const Family* f : families()) {
        std::set<ModelRole> seen;
        for (const RoleUse& use : f->roles) {
            EXPECT_NE(use.role, ModelRole::Checkpoint) << f->name;
            EXPECT_TRUE(seen.insert(use.role).second)
                << f->name << " " << model_role_name(use.role);
            EXPECT_EQ(find_role_use(*f, use.role), &use);
        }
        EXPECT_NE(find_role_use(*f, ModelRole::DiffusionModel), nullptr) << f->name;
        EXPECT_NE(find_role_use(*f, ModelRole::Vae), nullptr) << f->name;
    }
    EXPECT_TRUE(
        some_family_takes(ModelRole::Llm));  // Z-Image; Qwen-Image, Lumina 2 (not built yet)
    EXPECT_FALSE(some_family_takes(ModelRole::AudioVae));
}

// A file given for a part the detected family does not take is refused, naming its option.
TEST(FamilyRegistry, APartTheFamilyTakesNotIsNamedWithItsOption) {
    const std::string sd15 = sparse("sd15", "sd15_roles");
    const std::string llm = sparse("qwen3_4b_l36", "qwen3_llm");
    ModelFiles files;
    files.add(sd15, ModelRole::Checkpoint);
    files.add(llm, ModelRole::Llm);
    EXPECT_TRUE(files.has_role(ModelRole::Llm));
    std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("--llm '" + llm + "' is given, but the SD 1.x model takes no LLM"),
              std::string::npos)
        << error;

    ModelFiles sdxl;
    sdxl.add(sparse("sdxl", "sdxl_roles"), ModelRole::Checkpoint);
    sdxl.add(sparse("t5xxl_l2", "t5_for_sdxl"), ModelRole::T5);
    error = test::error_of([&] { load_model(sdxl, options()); });
    EXPECT_NE(error.find("--t5xxl"), std::string::npos) << error;
    EXPECT_NE(error.find("SDXL model takes no T5-XXL text encoder"), std::string::npos) << error;

    // A family that takes the part, not built yet, says so (Lumina 2: a NextDiT without
    // Z-Image's cap_embedder, with an LLM).
    const std::string lumina = test::temp_path("lumina2_dit.safetensors");
    write_safetensors(lumina, {{"layers.0.attention.qkv.weight", DType::F32, Shape{4, 4}, [] {
                                    return Tensor::zeros({4, 4});
                                }}});
    ModelFiles lumina2;
    lumina2.add(lumina, ModelRole::DiffusionModel);
    lumina2.add(llm, ModelRole::Llm);
    error = test::error_of([&] { load_model(lumina2, options()); });
    EXPECT_NE(error.find("Lumina 2 model, which this program cannot run yet"), std::string::npos)
        << error;

    // No family of the files' layout: the part no runnable family takes is named.
    const std::string odd = test::temp_path("odd_dit.safetensors");
    write_safetensors(odd, {{"odd_blocks.0.weight", DType::F32, Shape{4, 4}, [] {
                                 return Tensor::zeros({4, 4});
                             }}});
    ModelFiles unknown;
    unknown.add(odd, ModelRole::DiffusionModel);
    unknown.add(llm, ModelRole::AudioVae);  // LTX-2's, not built yet
    error = test::error_of([&] { load_model(unknown, options()); });
    EXPECT_NE(error.find("no known model layout"), std::string::npos) << error;
    EXPECT_NE(error.find("--audio-vae (audio VAE) is taken by no model family this build runs"),
              std::string::npos)
        << error;
}

// A part the family needs and the files lack is named with the option that gives it.
TEST(FamilyRegistry, AMissingPartIsNamedWithItsOption) {
    ModelFiles files;
    files.add(sparse("sd15", "sd15_no_vae", "--drop-prefix first_stage_model."),
              ModelRole::Checkpoint);
    std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("SD 1.x needs its VAE (--vae FILE)"), std::string::npos) << error;

    ModelFiles sdxl;
    sdxl.add(sparse("sdxl", "sdxl_no_clip_g", "--drop-prefix conditioner.embedders.1."),
             ModelRole::Checkpoint);
    error = test::error_of([&] { load_model(sdxl, options()); });
    EXPECT_NE(error.find("SDXL needs its OpenCLIP bigG text encoder (in the checkpoint, or "
                         "--clip_g FILE)"),
              std::string::npos)
        << error;
}

TEST(FamilyRegistry, SdxlRefinerIsNamedAsNotBuilt) {
    ModelFiles files;
    files.add(sparse("sdxl", "sdxl_refiner_like",
                     "--shape model.diffusion_model.input_blocks.4.1.transformer_blocks.0.attn2."
                     "to_k.weight=640,1280"),
              ModelRole::Checkpoint);
    EXPECT_EQ(detect_family(files).variant, "SDXL refiner");
    std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find("SDXL refiner model, which this program cannot run yet"),
              std::string::npos)
        << error;
}

TEST(FamilyRegistry, BrokenSdxlNamesTheTensor) {
    const std::string missing =
        "model.diffusion_model.input_blocks.4.1.transformer_blocks.1.attn1.to_q.weight";
    const std::string odd = "model.diffusion_model.output_blocks.2.2.conv.weight";
    ModelFiles files;
    files.add(
        sparse("sdxl", "sdxl_broken", "--drop " + missing + " --shape " + odd + "=1280,1280,3,2"),
        ModelRole::Checkpoint);
    std::string error = test::error_of([&] { load_model(files, options()); });
    EXPECT_NE(error.find(missing), std::string::npos) << error;
    EXPECT_NE(error.find(odd), std::string::npos) << error;

    ModelFiles no_clip_g;
    no_clip_g.add(sparse("sdxl", "sdxl_no_projection",
                         "--drop conditioner.embedders.1.model.text_projection"),
                  ModelRole::Checkpoint);
    error = test::error_of([&] { load_model(no_clip_g, options()); });
    EXPECT_NE(error.find("text_projection"), std::string::npos) << error;

    // A projection of another width loads, but its pooled vector would not fit label_emb.
    ModelFiles narrow;
    narrow.add(sparse("sdxl", "sdxl_narrow_projection",
                      "--shape conditioner.embedders.1.model.text_projection=1000,1280"),
               ModelRole::Checkpoint);
    error = test::error_of([&] { load_model(narrow, options()); });
    EXPECT_NE(error.find("text_projection"), std::string::npos) << error;
    EXPECT_NE(error.find("label_emb"), std::string::npos) << error;
}

TEST(FamilyRegistry, SdxlConditioningHasContextAndSizeVector) {
    ModelFiles files;
    files.add(sparse("sdxl", "sdxl_conditioning"), ModelRole::Checkpoint);
    LoadedModel m = load_model(files, options());
    EXPECT_EQ(m.components.family_name, "SDXL");
    EXPECT_FLOAT_EQ(m.components.latent.scale, 0.13025f);
    EXPECT_EQ(m.components.diffusion->in_channels(), 4);
    Conditioning c = m.components.conditioner->encode({"a cat", -1, 320, 256, false});
    EXPECT_EQ(c.context.shape(), (Shape{1, 77, 2048}));
    ASSERT_EQ(c.vector.shape(), (Shape{1, 2816}));
    // y = [pooled (1280), emb(256), emb(320), emb(0), emb(0), emb(256), emb(320)], each emb
    // cat(cos(v f_i), sin(v f_i)), f_i = 10000^(-i/128).
    std::vector<float> y = c.vector.to_vector();
    const float values[6] = {256, 320, 0, 0, 256, 320};
    for (int k = 0; k < 6; ++k) {
        for (int i = 0; i < 128; i += 17) {
            const double f = std::exp(-std::log(10000.0) * i / 128.0);
            EXPECT_NEAR(y[1280 + 256 * k + i], std::cos(values[k] * f), 2e-3) << k << " " << i;
            EXPECT_NEAR(y[1280 + 256 * k + 128 + i], std::sin(values[k] * f), 2e-3)
                << k << " " << i;
        }
    }
    // An empty negative prompt gives a zero context, as the reference's SDXL path.
    Conditioning u = m.components.conditioner->encode({"", -1, 320, 256, true});
    EXPECT_EQ(u.context.shape(), (Shape{1, 77, 2048}));
    for (float v : u.context.to_vector()) ASSERT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace sd
