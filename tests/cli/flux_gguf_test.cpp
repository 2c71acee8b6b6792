// FLUX.1 from GGUF end to end: the FLUX fixture's DiT and T5-XXL converted to q8_0 by
// `sd-cli -M convert` (once, into the fixture cache), their tensors' names and types checked
// against the reference program's choices, and the flux_euler reference case run on them.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/tensor_file.h"
#include "run_cli.h"
#include "test_util.h"
#include "tokenizer/t5_tokenizer.h"

namespace sd {
namespace {

std::string quote(const std::string& s) {
    return "'" + s + "'";
}

// The T5 in q8_0 carries its tokenizer: the vocabulary read back from the GGUF's metadata
// tokenizes as the spiece.model it came from.
TEST(FluxGguf, T5CarriesItsTokenizer) {
    const std::string gguf =
        cli::converted_q8_0("flux/t5xxl_l2_f16_seed13.safetensors", "flux/t5xxl_l2_q8_0.gguf");
    const TensorFile f = open_tensor_file(gguf);
    ASSERT_TRUE(T5Tokenizer::gguf_has_vocab(f.metadata));
    const T5Tokenizer embedded = T5Tokenizer::from_gguf_metadata(f.metadata, gguf);
    const T5Tokenizer original =
        T5Tokenizer::from_file(test::fixtures_dir() + "/tokenizers/t5/spiece.model");
    EXPECT_EQ(embedded.vocab_size(), original.vocab_size());
    for (const char* text : {"a lovely cat holding a sign", "  Hello,   WORLD!  ", "naïve café 42"})
        EXPECT_EQ(embedded.encode(text), original.encode(text)) << text;
    size_t q8 = 0;
    for (const TensorRecord& r : f.tensors) {
        EXPECT_EQ(r.name.rfind("text_encoders.t5xxl.transformer.", 0), 0u) << r.name;
        q8 += r.dtype == DType::Q8_0;
    }
    EXPECT_EQ(q8, f.tensors.size()) << "the reference converts every T5 tensor at q8_0";
}

// The DiT in q8_0: the names of the source under model.diffusion_model. (as the reference's
// --diffusion-model convert writes them); the block weight matrices q8_0, the rest bf16.
TEST(FluxGguf, DiTNamesAndTypes) {
    const std::string gguf = cli::converted_q8_0("flux/flux_dev_d2s2_bf16_seed10.safetensors",
                                                 "flux/flux_dev_d2s2_q8_0.gguf");
    const TensorFile source =
        open_tensor_file(test::fixture_file("flux/flux_dev_d2s2_bf16_seed10.safetensors"));
    const TensorFile result = open_tensor_file(gguf);
    EXPECT_EQ(result.format, "gguf");
    ASSERT_EQ(result.tensors.size(), source.tensors.size());
    const std::string prefix = "model.diffusion_model.";
    size_t q8 = 0;
    for (const TensorRecord& r : result.tensors) {
        ASSERT_EQ(r.name.rfind(prefix, 0), 0u) << r.name;
        const TensorRecord* s = source.find(r.name.substr(prefix.size()));
        ASSERT_NE(s, nullptr) << r.name;
        EXPECT_EQ(r.shape, s->shape) << r.name;
        const bool block_weight =
            r.name.find("blocks.") != std::string::npos && r.name.ends_with(".weight");
        EXPECT_EQ(r.dtype, block_weight ? DType::Q8_0 : DType::BF16) << r.name;
        q8 += r.dtype == DType::Q8_0;
    }
    EXPECT_EQ(q8, 26u);
}

// The reference case flux_euler with the DiT and T5 in q8_0: sd-cli runs it and the image
// stays close to the reference program's (bf16 DiT, f16 T5) image.
TEST(FluxGguf, ReferenceCaseOnQ8_0) {
    const std::string dit = cli::converted_q8_0("flux/flux_dev_d2s2_bf16_seed10.safetensors",
                                                "flux/flux_dev_d2s2_q8_0.gguf");
    const std::string t5 =
        cli::converted_q8_0("flux/t5xxl_l2_f16_seed13.safetensors", "flux/t5xxl_l2_q8_0.gguf");
    const std::string folder = test::fixtures_dir() + "/reference/flux";
    const std::string out = test::temp_path("sd_flux_gguf_q8_0.png");
    const std::string command =
        quote(SD_CLI_PATH) + " --diffusion-model " + quote(dit) + " --t5xxl " + quote(t5) +
        " --vae " + quote(test::fixture_file("flux/flux_ae_f32_seed11.safetensors")) +
        " --clip_l " + quote(test::fixture_file("flux/clip_l_f16_seed12.safetensors")) +
        " --tokenizer-dir " + quote(test::fixtures_dir() + "/tokenizers") +
        " -p 'a lovely cat holding a sign' --cfg-scale 1 --guidance 3.5 --sampling-method euler"
        " --steps 4 -W 256 -H 256 -s 42 --rng cuda -t 2 -o " +
        quote(out) + " 2>&1";
    std::printf("%s\n", command.c_str());
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    image::Image got = image::read_image(out, 3);
    image::Image want = image::read_image(folder + "/flux_euler.png", 3);
    ASSERT_EQ(got.width, want.width);
    ASSERT_EQ(got.height, want.height);
    const double p = test::psnr(got.pixels, want.pixels);
    std::printf("flux_euler with a q8_0 DiT and T5: PSNR %.2f dB against the bf16 reference\n", p);
    RecordProperty("psnr_db", std::to_string(p));
    EXPECT_GE(p, 35.0);  // 42.5 dB measured
    std::remove(out.c_str());
}

// CLIP-L and T5-XXL both converted to GGUF with their vocabularies, as a user makes them: each
// text encoder finds its own vocabulary in its own file (the CLIP search passes the T5's by),
// with no tokenizer files anywhere.
TEST(FluxGguf, EachTextEncoderFindsItsOwnVocabulary) {
    const std::string clip =
        cli::converted_q8_0("flux/clip_l_f16_seed12.safetensors", "flux/clip_l_q8_0.gguf");
    const std::string t5 =
        cli::converted_q8_0("flux/t5xxl_l2_f16_seed13.safetensors", "flux/t5xxl_l2_q8_0.gguf");
    const std::string out = test::temp_path("sd_flux_gguf_vocabularies.png");
    const std::string command =
        "env -u SD_TOKENIZER_DIR " + quote(SD_CLI_PATH) + " --diffusion-model " +
        quote(test::fixture_file("flux/flux_dev_d2s2_bf16_seed10.safetensors")) + " --t5xxl " +
        quote(t5) + " --clip_l " + quote(clip) + " --vae " +
        quote(test::fixture_file("flux/flux_ae_f32_seed11.safetensors")) +
        " -p 'a lovely cat holding a sign' --cfg-scale 1 --steps 1 -W 64 -H 64 -s 42 -t 2 -o " +
        quote(out) + " 2>&1";
    std::printf("%s\n", command.c_str());
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::remove(out.c_str());
}

}  // namespace
}  // namespace sd
