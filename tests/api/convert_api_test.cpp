// The C API's convert(): a small generated checkpoint converted to every engine dtype, the
// CLIP vocabulary embedded when one is found, and every failure a false result plus a
// logged message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "stable-diffusion.h"
#include "test_util.h"
#include "tokenizer/clip_tokenizer.h"

namespace sd {
namespace {

OutputTensor out_of(const std::string& name, const Tensor& t) {
    return {name, t.dtype(), t.shape(), [t] { return t; }};
}

// A checkpoint with a UNet, VAE and text-encoder tensor, rows a multiple of 256 values.
std::string small_checkpoint() {
    static const std::string path = [] {
        std::string p = test::temp_path("small_model.safetensors");
        write_safetensors(
            p, {out_of("model.diffusion_model.middle_block.1.proj_in.weight",
                       test::random_tensor({8, 256}, 1)),
                out_of("model.diffusion_model.middle_block.1.proj_in.bias",
                       test::random_tensor({8}, 2)),
                out_of("first_stage_model.decoder.conv_in.weight",
                       test::random_tensor({4, 4, 3, 3}, 3)),
                out_of("cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight",
                       test::random_tensor({4, 512}, 4))});
        return p;
    }();
    return path;
}

std::string small_vae() {
    static const std::string path = [] {
        std::string p = test::temp_path("small_vae.safetensors");
        write_safetensors(
            p, {out_of("decoder.conv_out.weight", test::random_tensor({3, 4, 3, 3}, 5))});
        return p;
    }();
    return path;
}

struct Log {
    std::string text;
};

class ConvertApi : public testing::Test {
  protected:
    void SetUp() override {
        sd_set_log_callback(
            [](sd_log_level_t, const char* t, void* d) { static_cast<Log*>(d)->text += t; }, &log_);
        ::unsetenv("SD_TOKENIZER_DIR");
    }
    void TearDown() override {
        sd_set_log_callback(nullptr, nullptr);
        ::unsetenv("SD_TOKENIZER_DIR");
    }
    Log log_;
};

TEST_F(ConvertApi, EveryEngineDtype) {
    const sd_type_t types[] = {SD_TYPE_F32,  SD_TYPE_F16,    SD_TYPE_BF16,  SD_TYPE_Q4_0,
                               SD_TYPE_Q4_1, SD_TYPE_Q5_0,   SD_TYPE_Q5_1,  SD_TYPE_Q8_0,
                               SD_TYPE_Q2_K, SD_TYPE_Q3_K,   SD_TYPE_Q4_K,  SD_TYPE_Q5_K,
                               SD_TYPE_Q6_K, SD_TYPE_IQ4_NL, SD_TYPE_IQ4_XS};
    for (sd_type_t type : types) {
        const std::string out =
            test::temp_path(std::string("converted_") + sd_type_name(type) + ".gguf");
        ASSERT_TRUE(convert(small_checkpoint().c_str(), nullptr, out.c_str(), type, nullptr, false))
            << sd_type_name(type) << ": " << log_.text;
        TensorFile f = open_tensor_file(out);
        ASSERT_EQ(f.tensors.size(), 4u);
        const TensorRecord* w = f.find("model.diffusion_model.middle_block.1.proj_in.weight");
        ASSERT_NE(w, nullptr);
        EXPECT_STREQ(dtype_name(w->dtype), sd_type_name(type));
        EXPECT_EQ(f.find("model.diffusion_model.middle_block.1.proj_in.bias")->dtype, DType::F32);
        Tensor loaded = w->load();
        EXPECT_EQ(loaded.shape(), (Shape{8, 256}));
        std::remove(out.c_str());
    }
}

TEST_F(ConvertApi, KeepTypesVaeAndRules) {
    const std::string out = test::temp_path("with_vae.gguf");
    ASSERT_TRUE(convert(small_checkpoint().c_str(), small_vae().c_str(), out.c_str(), SD_TYPE_COUNT,
                        "proj_in\\.weight=q8_0", true))
        << log_.text;
    TensorFile f = open_tensor_file(out);
    EXPECT_NE(f.find("first_stage_model.decoder.conv_out.weight"), nullptr);
    EXPECT_EQ(f.find("model.diffusion_model.middle_block.1.proj_in.weight")->dtype, DType::Q8_0);
    EXPECT_EQ(
        f.find("cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight")->dtype,
        DType::F32);
    const std::string st = test::temp_path("as.safetensors");
    ASSERT_TRUE(
        convert(small_checkpoint().c_str(), nullptr, st.c_str(), SD_TYPE_F16, nullptr, false));
    EXPECT_EQ(open_tensor_file(st).format, "safetensors");
}

TEST_F(ConvertApi, EmbedsTheClipVocabulary) {
    // No vocabulary file anywhere: the built-in one goes into the GGUF.
    const std::string builtin = test::temp_path("builtin_vocab.gguf");
    ASSERT_TRUE(
        convert(small_checkpoint().c_str(), nullptr, builtin.c_str(), SD_TYPE_F16, nullptr, false));
    EXPECT_TRUE(ClipTokenizer::gguf_has_vocab(open_tensor_file(builtin).metadata));
    EXPECT_NE(log_.text.find("built-in CLIP vocabulary"), std::string::npos) << log_.text;

    ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
    const std::string with = test::temp_path("vocab.gguf");
    ASSERT_TRUE(
        convert(small_checkpoint().c_str(), nullptr, with.c_str(), SD_TYPE_Q8_0, nullptr, false))
        << log_.text;
    TensorFile f = open_tensor_file(with);
    ASSERT_TRUE(ClipTokenizer::gguf_has_vocab(f.metadata));
    ClipTokenizer tok = ClipTokenizer::from_gguf_metadata(f.metadata, with);
    EXPECT_EQ(tok.encode("a photo of a cat"), (std::vector<int32_t>{320, 1125, 539, 320, 2368}));
}

TEST_F(ConvertApi, FailuresReturnFalseAndLog) {
    const std::string out = test::temp_path("never.gguf");
    EXPECT_FALSE(convert(nullptr, nullptr, out.c_str(), SD_TYPE_F16, nullptr, false));
    EXPECT_NE(log_.text.find("no input model"), std::string::npos) << log_.text;
    log_.text.clear();
    EXPECT_FALSE(convert("/nonexistent/model.safetensors", nullptr, out.c_str(), SD_TYPE_F16,
                         nullptr, false));
    EXPECT_NE(log_.text.find("/nonexistent/model.safetensors"), std::string::npos) << log_.text;
    log_.text.clear();
    EXPECT_FALSE(
        convert(small_checkpoint().c_str(), nullptr, out.c_str(), SD_TYPE_IQ2_XS, nullptr, false));
    EXPECT_NE(log_.text.find("iq2_xs"), std::string::npos) << log_.text;
    log_.text.clear();
    EXPECT_FALSE(
        convert(small_checkpoint().c_str(), nullptr, out.c_str(), SD_TYPE_F16, "[bad=q8_0", false));
    EXPECT_NE(log_.text.find("--tensor-type-rules"), std::string::npos) << log_.text;
    log_.text.clear();
    const std::string st = test::temp_path("quant.safetensors");
    EXPECT_FALSE(
        convert(small_checkpoint().c_str(), nullptr, st.c_str(), SD_TYPE_Q8_0, nullptr, false));
    EXPECT_NE(log_.text.find("safetensors cannot hold"), std::string::npos) << log_.text;
    log_.text.clear();
    EXPECT_FALSE(convert(small_checkpoint().c_str(), "/nonexistent/vae.pt", out.c_str(),
                         SD_TYPE_F16, nullptr, false));
    EXPECT_NE(log_.text.find("/nonexistent/vae.pt"), std::string::npos);
    EXPECT_FALSE(convert(small_checkpoint().c_str(), nullptr, "/nonexistent/dir/out.gguf",
                         SD_TYPE_F16, nullptr, false));
    EXPECT_FALSE(
        convert(small_checkpoint().c_str(), nullptr, nullptr, SD_TYPE_F16, nullptr, false));
    std::string garbage = test::write_temp("garbage.safetensors", "not a model file at all");
    EXPECT_FALSE(convert(garbage.c_str(), nullptr, out.c_str(), SD_TYPE_F16, nullptr, false));
    EXPECT_FALSE(std::ifstream(out).good());
    EXPECT_FALSE(std::ifstream(out + ".part").good());
}

}  // namespace
}  // namespace sd
