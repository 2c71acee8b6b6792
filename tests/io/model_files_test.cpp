#include "io/model_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "families/registry.h"
#include "fixture_files.h"
#include "io/name_conversion.h"
#include "io/tensor_writer.h"
#include "io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(NameConversion, DiffusersUnetNames) {
    EXPECT_EQ(unet_diffusers_to_ldm("conv_in.weight", false), "input_blocks.0.0.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("time_embedding.linear_2.bias", false), "time_embed.2.bias");
    EXPECT_EQ(unet_diffusers_to_ldm("down_blocks.1.resnets.1.norm1.weight", false),
              "input_blocks.5.0.in_layers.0.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("down_blocks.2.attentions.0.proj_in.weight", false),
              "input_blocks.7.1.proj_in.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("down_blocks.0.downsamplers.0.conv.weight", false),
              "input_blocks.3.0.op.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("mid_block.resnets.1.conv_shortcut.weight", false),
              "middle_block.2.skip_connection.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("mid_block.attentions.0.transformer_blocks.0.attn1.to_q.weight",
                                    false),
              "middle_block.1.transformer_blocks.0.attn1.to_q.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("up_blocks.3.resnets.2.time_emb_proj.weight", true),
              "output_blocks.11.0.emb_layers.1.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("up_blocks.0.upsamplers.0.conv.weight", false),
              "output_blocks.2.1.conv.weight");
    EXPECT_EQ(unet_diffusers_to_ldm("up_blocks.1.upsamplers.0.conv.bias", true),
              "output_blocks.5.2.conv.bias");
    EXPECT_EQ(unet_diffusers_to_ldm("add_embedding.linear_1.weight", false),
              "label_emb.0.0.weight");
}

TEST(NameConversion, DiffusersVaeNames) {
    EXPECT_EQ(vae_diffusers_to_ldm("encoder.down_blocks.2.resnets.0.conv_shortcut.weight"),
              "encoder.down.2.block.0.nin_shortcut.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("decoder.up_blocks.0.resnets.2.conv1.weight"),
              "decoder.up.3.block.2.conv1.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("decoder.up_blocks.1.upsamplers.0.conv.weight"),
              "decoder.up.2.upsample.conv.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("encoder.down_blocks.0.downsamplers.0.conv.bias"),
              "encoder.down.0.downsample.conv.bias");
    EXPECT_EQ(vae_diffusers_to_ldm("decoder.mid_block.resnets.1.norm2.weight"),
              "decoder.mid.block_2.norm2.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("encoder.mid_block.attentions.0.to_out.0.weight"),
              "encoder.mid.attn_1.proj_out.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("decoder.mid_block.attentions.0.query.bias"),
              "decoder.mid.attn_1.q.bias");
    EXPECT_EQ(vae_diffusers_to_ldm("decoder.conv_norm_out.weight"), "decoder.norm_out.weight");
    EXPECT_EQ(vae_diffusers_to_ldm("post_quant_conv.weight"), "post_quant_conv.weight");
}

// Every canonical tensor of `a` exists in `b` with the same dtype, shape and values.
void expect_same_tensors(const ModelFiles& a, const ModelFiles& b, const std::string& prefix) {
    size_t compared = 0;
    for (const std::string& name : a.names()) {
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        const TensorRecord* rb = b.find(name);
        ASSERT_NE(rb, nullptr) << name << " missing";
        const TensorRecord& ra = *a.find(name);
        ASSERT_EQ(ra.shape, rb->shape) << name;
        ASSERT_EQ(ra.dtype, rb->dtype) << name;
        Tensor ta = ra.load().contiguous(), tb = rb->load().contiguous();
        ASSERT_EQ(std::memcmp(ta.data_ptr(), tb.data_ptr(), ta.nbytes()), 0) << name;
        ++compared;
    }
    EXPECT_GT(compared, 0u) << prefix;
}

TEST(ModelFiles, Sd15CheckpointIsSd1AndKeepsItsNames) {
    std::string path = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    EXPECT_EQ(files.size(), 1130u);
    EXPECT_EQ(detect_family(files).variant, "SD 1.x");
    EXPECT_TRUE(detect_family(files).runnable());
    EXPECT_NE(
        files.find("model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight"),
        nullptr);
    EXPECT_NE(files.find("cond_stage_model.transformer.text_model.final_layer_norm.weight"),
              nullptr);
    EXPECT_EQ(files.get("first_stage_model.decoder.mid.attn_1.q.weight").shape,
              (Shape{512, 512, 1, 1}));
    EXPECT_ERROR_CONTAINS(files.get("model.diffusion_model.nope"), "nope");
}

// A tiny tensor file with the given names (shapes [2, 2]).
void write_names(const std::string& path, const std::vector<std::string>& names) {
    std::vector<OutputTensor> tensors;
    for (const std::string& n : names)
        tensors.push_back({n, DType::F32, Shape{2, 2}, [] { return Tensor::zeros({2, 2}); }});
    write_safetensors(path, tensors);
}

TEST(ModelFiles, SdxlComponentNames) {
    // A diffusers SDXL folder: text_encoder_2 is bigG (CLIPTextModelWithProjection), the UNet
    // has add_embedding (label_emb).
    const std::string dir = test::temp_path("sdxl_diffusers");
    test::run_or_fail("rm -rf " + dir + " && mkdir -p " + dir + "/unet " + dir + "/text_encoder " +
                      dir + "/text_encoder_2");
    std::ofstream(dir + "/model_index.json") << R"({"unet": ["diffusers", "UNet2DConditionModel"],
               "text_encoder": ["transformers", "CLIPTextModel"],
               "text_encoder_2": ["transformers", "CLIPTextModelWithProjection"]})";
    write_names(dir + "/unet/diffusion_pytorch_model.safetensors",
                {"add_embedding.linear_1.weight", "down_blocks.1.attentions.0.proj_in.weight"});
    write_names(dir + "/text_encoder/model.safetensors",
                {"text_model.encoder.layers.0.self_attn.q_proj.weight"});
    write_names(dir + "/text_encoder_2/model.safetensors",
                {"text_model.encoder.layers.0.self_attn.q_proj.weight", "text_projection.weight"});
    ModelFiles files;
    files.add(dir, ModelRole::Checkpoint);
    for (const char* name : {"model.diffusion_model.label_emb.0.0.weight",
                             "model.diffusion_model.input_blocks.4.1.proj_in.weight",
                             "cond_stage_model.transformer.text_model.encoder.layers.0.self_attn."
                             "q_proj.weight",
                             "cond_stage_model.1.transformer.text_model.encoder.layers.0.self_attn."
                             "q_proj.weight",
                             "cond_stage_model.1.transformer.text_projection.weight"}) {
        EXPECT_NE(files.find(name), nullptr) << name;
    }
    // The single-file (sgm) names, and --clip_g as a separate OpenCLIP file, map the same way.
    const std::string ckpt = test::temp_path("sgm_names.safetensors");
    write_names(ckpt, {"conditioner.embedders.0.transformer.text_model.final_layer_norm.weight",
                       "conditioner.embedders.1.model.ln_final.weight",
                       "conditioner.embedders.1.model.text_projection"});
    ModelFiles sgm;
    sgm.add(ckpt, ModelRole::Checkpoint);
    EXPECT_NE(sgm.find("cond_stage_model.transformer.text_model.final_layer_norm.weight"), nullptr);
    EXPECT_NE(sgm.find("cond_stage_model.1.transformer.text_model.final_layer_norm.weight"),
              nullptr);
    EXPECT_NE(sgm.find("cond_stage_model.1.transformer.text_projection.weight"), nullptr);
    const std::string clip_g = test::temp_path("clip_g.safetensors");
    write_names(clip_g, {"text_model.final_layer_norm.weight", "text_projection.weight"});
    ModelFiles separate;
    separate.add(clip_g, ModelRole::TextEncoder2);
    EXPECT_NE(separate.find("cond_stage_model.1.transformer.text_model.final_layer_norm.weight"),
              nullptr);
    EXPECT_NE(separate.find("cond_stage_model.1.transformer.text_projection.weight"), nullptr);
    test::run_or_fail("rm -rf " + dir);
}

// A diffusers DiT folder (FLUX's layout): transformer/ is the diffusion model, text_encoder/
// CLIP-L and text_encoder_2/ the T5 (SDXL's bigG in the same folder name is told apart by
// its names).
TEST(ModelFiles, DiffusersTransformerFolderIsTheDiffusionModel) {
    const std::string dir = test::temp_path("flux_diffusers");
    test::run_or_fail("rm -rf " + dir + " && mkdir -p " + dir + "/transformer " + dir +
                      "/text_encoder " + dir + "/text_encoder_2 " + dir + "/vae " + dir +
                      "/scheduler");
    std::ofstream(dir + "/model_index.json")
        << R"({"transformer": ["diffusers", "FluxTransformer2DModel"],
               "text_encoder": ["transformers", "CLIPTextModel"],
               "text_encoder_2": ["transformers", "T5EncoderModel"],
               "vae": ["diffusers", "AutoencoderKL"],
               "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"]})";
    write_names(dir + "/transformer/diffusion_pytorch_model.safetensors",
                {"transformer_blocks.0.attn.to_q.weight", "x_embedder.weight"});
    write_names(dir + "/text_encoder/model.safetensors", {"text_model.final_layer_norm.weight"});
    write_names(dir + "/text_encoder_2/model.safetensors",
                {"shared.weight", "encoder.block.0.layer.1.DenseReluDense.wo.weight"});
    write_names(dir + "/vae/diffusion_pytorch_model.safetensors", {"decoder.conv_in.weight"});
    ModelFiles files;
    files.add(dir, ModelRole::Checkpoint);
    for (const char* name : {"model.diffusion_model.transformer_blocks.0.attn.to_q.weight",
                             "model.diffusion_model.x_embedder.weight",
                             "cond_stage_model.transformer.text_model.final_layer_norm.weight",
                             "text_encoders.t5xxl.transformer.shared.weight",
                             "text_encoders.t5xxl.transformer.encoder.block.0.layer.1."
                             "DenseReluDense.wo.weight",
                             "first_stage_model.decoder.conv_in.weight"}) {
        EXPECT_NE(files.find(name), nullptr) << name;
    }
    EXPECT_EQ(files.size(), 6u);
    EXPECT_TRUE(files.has_role(ModelRole::DiffusionModel));
    EXPECT_FALSE(files.has_role(ModelRole::TextEncoder2));
    EXPECT_TRUE(files.role_files().empty());  // a folder given as -m
    test::run_or_fail("rm -rf " + dir);
}

// Qwen-Image's diffusers text_encoder/ is Qwen2.5-VL: an LLM whose vision tower lands under
// the LLM vision prefix; a --llm_vision file then replaces that alone.
TEST(ModelFiles, LlmAndItsVisionTowerAreRolesOfTheirOwn) {
    const std::string dir = test::temp_path("qwen_image_diffusers");
    test::run_or_fail("rm -rf " + dir + " && mkdir -p " + dir + "/transformer " + dir +
                      "/text_encoder");
    std::ofstream(dir + "/model_index.json")
        << R"({"transformer": ["diffusers", "QwenImageTransformer2DModel"],
               "text_encoder": ["transformers", "Qwen2_5_VLForConditionalGeneration"]})";
    write_names(dir + "/transformer/diffusion_pytorch_model.safetensors",
                {"transformer_blocks.0.img_mod.1.weight"});
    write_names(dir + "/text_encoder/model.safetensors",
                {"model.embed_tokens.weight", "visual.blocks.0.attn.qkv.weight"});
    ModelFiles files;
    files.add(dir, ModelRole::Checkpoint);
    EXPECT_NE(files.find("text_encoders.llm.model.embed_tokens.weight"), nullptr);
    EXPECT_NE(files.find("text_encoders.llm.visual.blocks.0.attn.qkv.weight"), nullptr);
    EXPECT_TRUE(files.has_role(ModelRole::Llm));
    EXPECT_TRUE(files.has_role(ModelRole::LlmVision));
    EXPECT_FALSE(files.has_role(ModelRole::TextEncoder));
    EXPECT_EQ(detect_family(files).variant, "Qwen-Image");

    const std::string vision = test::temp_path("llm_vision.safetensors");
    write_names(vision, {"blocks.0.attn.proj.weight"});
    files.add(vision, ModelRole::LlmVision);
    EXPECT_EQ(files.find("text_encoders.llm.visual.blocks.0.attn.qkv.weight"), nullptr);
    EXPECT_NE(files.find("text_encoders.llm.visual.blocks.0.attn.proj.weight"), nullptr);
    EXPECT_NE(files.find("text_encoders.llm.model.embed_tokens.weight"), nullptr);
    ASSERT_EQ(files.role_files().size(), 1u);
    EXPECT_EQ(files.role_files()[0].role, ModelRole::LlmVision);
    EXPECT_EQ(files.role_files()[0].path, vision);
    std::remove(vision.c_str());
    test::run_or_fail("rm -rf " + dir);
}

TEST(ModelFiles, Sd15DiffusersFolderLoadsToTheSameTensors) {
    std::string ckpt = test::generated_checkpoint("sd15", "f16", 1);
    std::string dir = test::temp_path("sd15_diffusers");
    test::run_or_fail("rm -rf " + dir + " && /usr/bin/python3 " + test::tests_source_dir() +
                      "/tools/write_diffusers_folder.py " + ckpt + " " + dir + " --tokenizer " +
                      test::fixtures_dir() + "/tokenizers/clip");
    ModelFiles original, diffusers;
    original.add(ckpt, ModelRole::Checkpoint);
    diffusers.add(dir, ModelRole::Checkpoint);
    EXPECT_EQ(diffusers.size(), original.size());
    EXPECT_EQ(detect_family(diffusers).variant, "SD 1.x");
    expect_same_tensors(original, diffusers, "model.diffusion_model.");
    expect_same_tensors(original, diffusers, "first_stage_model.");
    expect_same_tensors(original, diffusers, "cond_stage_model.");
    test::run_or_fail("rm -rf " + dir);
}

TEST(ModelFiles, Sd21CheckpointIsSd2WithSplitOpenClipAttention) {
    std::string path = test::generated_checkpoint("sd21", "f16", 2);
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    EXPECT_EQ(detect_family(files).variant, "SD 2.x");
    const std::string layer = "cond_stage_model.transformer.text_model.encoder.layers.3.";
    for (const char* p : {"q_proj", "k_proj", "v_proj"}) {
        EXPECT_EQ(files.get(layer + "self_attn." + p + ".weight").shape, (Shape{1024, 1024}));
        EXPECT_EQ(files.get(layer + "self_attn." + p + ".bias").shape, (Shape{1024}));
    }
    EXPECT_NE(files.find(layer + "mlp.fc1.weight"), nullptr);
    EXPECT_NE(
        files.find("cond_stage_model.transformer.text_model.embeddings.position_embedding.weight"),
        nullptr);
    EXPECT_EQ(files.find("cond_stage_model.model.logit_scale"), nullptr);
    // The three projections are the three row blocks of the fused in_proj_weight.
    TensorFile raw = read_safetensors(path);
    Tensor fused =
        raw.find("cond_stage_model.model.transformer.resblocks.3.attn.in_proj_weight")->load();
    Tensor k = files.get(layer + "self_attn.k_proj.weight").load();
    EXPECT_EQ(std::memcmp(k.data_ptr(), fused.narrow(0, 1024, 1024).data_ptr(), k.nbytes()), 0);
    // OpenCLIP's text_projection is used as a Linear weight as stored, as the reference
    // program uses it (see io/name_conversion.cpp).
    Tensor proj = raw.find("cond_stage_model.model.text_projection")->load();
    Tensor lin = files.get("cond_stage_model.transformer.text_projection.weight").load();
    EXPECT_EQ(lin.to_vector(), proj.to_vector());
}

TEST(ModelFiles, AllDtypesOfTheFixturesLoad) {
    for (const char* manifest : {"sd15", "sd21"}) {
        int seed = std::string(manifest) == "sd15" ? 1 : 2;
        for (const char* dtype : {"f32", "bf16"}) {
            std::string path = test::generated_checkpoint(manifest, dtype, seed, /*cache=*/false);
            ModelFiles files;
            files.add(path, ModelRole::Checkpoint);
            EXPECT_GT(files.size(), 1000u);
            DType want = std::string(dtype) == "f32" ? DType::F32 : DType::BF16;
            EXPECT_EQ(files.get("model.diffusion_model.out.2.weight").dtype, want);
            EXPECT_EQ(detect_family(files).variant,
                      std::string(manifest) == "sd15" ? "SD 1.x" : "SD 2.x");
            // Values: a tensor read back equals the f16 fixture's within f16 rounding.
            Tensor t = files.get("model.diffusion_model.out.2.bias").load();
            ModelFiles f16;
            f16.add(test::generated_checkpoint(manifest, "f16", seed), ModelRole::Checkpoint);
            test::expect_close(t, f16.get("model.diffusion_model.out.2.bias").load(), 1e-3, 1e-2,
                               dtype);
            std::remove(path.c_str());
        }
    }
}

TEST(ModelFiles, ComponentFilesReplaceTheCheckpointsComponent) {
    std::string path = test::generated_checkpoint("sd15", "f16", 1);
    // A separate VAE file in diffusers naming, with different values.
    Tensor w = test::random_tensor({4, 4, 1, 1}, 5);
    std::string vae = test::temp_path("vae.safetensors");
    write_safetensors(vae, {{"post_quant_conv.weight", DType::F32, w.shape(), [w] { return w; }}});
    ModelFiles files;
    files.add(path, ModelRole::Checkpoint);
    files.add(vae, ModelRole::Vae);
    EXPECT_FALSE(files.find("first_stage_model.decoder.conv_in.weight"));
    EXPECT_EQ(files.get("first_stage_model.post_quant_conv.weight").load().to_vector(),
              w.to_vector());
    EXPECT_TRUE(files.find("model.diffusion_model.out.2.weight"));
    std::remove(vae.c_str());
}

// Peak RSS of a fresh process that opens the 2 GiB sd15 f16 file and lists every tensor
// (tests/tools/list_model_tensors): only headers are read, so it stays far below the file.
TEST(ModelFiles, ListingTheSd15FixtureKeepsRssSmall) {
    std::string path = test::generated_checkpoint("sd15", "f16", 1);
    std::string out = test::temp_path("listing.txt");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int fd = ::open(out.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
        ::dup2(fd, 1);
        ::execl(SD_LIST_MODEL_TENSORS, SD_LIST_MODEL_TENSORS, path.c_str(), nullptr);
        ::_exit(127);
    }
    int status = 0;
    struct rusage usage {};
    ASSERT_EQ(::wait4(pid, &status, 0, &usage), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "list_model_tensors failed";
    std::ifstream listing(out);
    size_t lines = 0;
    for (std::string line; std::getline(listing, line);) ++lines;
    EXPECT_EQ(lines, 1130u);
    double peak_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
    std::printf("peak RSS of a process listing the %zu tensors of the sd15 f16 file: %.1f MiB\n",
                lines, peak_mib);
#ifdef SD_SANITIZE_BUILD
    // AddressSanitizer's shadow memory and allocator alone take ~600 MiB of RSS here; the
    // bound is checked in the plain build.
    (void)peak_mib;
#else
    EXPECT_LT(peak_mib, 100.0);
#endif
    std::remove(out.c_str());
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

// The sd15 fixture written as a PyTorch checkpoint with torch's real zip layout (SD's
// {"state_dict": ...} wrapper; once plain, once with strided tensors sharing storages)
// loads to the same tensors.
TEST(ModelFiles, Sd15TorchCheckpointLoadsToTheSameTensors) {
    std::string src = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles original;
    original.add(src, ModelRole::Checkpoint);
    for (const char* flags : {"--state-dict", "--state-dict --strided --shared"}) {
        std::string ckpt = test::temp_path("sd15.ckpt");
        test::run_or_fail("/usr/bin/python3 " + test::tests_source_dir() +
                          "/io/write_torch_checkpoint.py " + src + " " + ckpt + " " + flags);
        ModelFiles loaded;
        loaded.add(ckpt, ModelRole::Checkpoint);
        EXPECT_EQ(loaded.size(), original.size()) << flags;
        EXPECT_EQ(detect_family(loaded).variant, "SD 1.x");
        for (const char* prefix :
             {"model.diffusion_model.", "first_stage_model.", "cond_stage_model."}) {
            expect_same_tensors(original, loaded, prefix);
        }
        std::remove(ckpt.c_str());
    }
}

}  // namespace
}  // namespace sd
