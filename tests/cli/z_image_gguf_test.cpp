// Z-Image with its LLM from GGUF, as a user downloads it: the Qwen3-4B fixture converted to q8_0
// by `sd-cli -M convert` (once, into the fixture cache) carries the Qwen2 vocabulary in its
// metadata, and the zimage reference case runs on it with no tokenizer files anywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/io_test_util.h"
#include "io/tensor_file.h"
#include "run_cli.h"
#include "test_util.h"
#include "tokenizer/llm_tokenizer.h"

namespace sd {
namespace {

std::string quote(const std::string& s) {
    return "'" + s + "'";
}

// The fixture's Qwen3-4B converted to q8_0 with its vocabulary (4.3 GB, in the fixture cache).
std::string qwen3_q8_0() {
    return cli::converted_q8_0("qwen3/qwen3_4b_bf16_seed31.safetensors",
                               "qwen3/qwen3_4b_q8_0.gguf");
}

TEST(ZImageGguf, TheLlmCarriesItsVocabulary) {
    const std::string gguf = qwen3_q8_0();
    const TensorFile f = open_tensor_file(gguf);
    ASSERT_TRUE(LlmTokenizer::gguf_has_vocab(f.metadata));
    const LlmTokenizer embedded = LlmTokenizer::from_gguf_metadata(f.metadata, gguf);
    const LlmTokenizer original =
        LlmTokenizer::from_file(test::fixtures_dir() + "/tokenizers/qwen2/tokenizer.json");
    for (const char* text :
         {"<|im_start|>user\na cat<|im_end|>\n", "  naïve café 42  ", "一只猫 🐱\n\n  x"})
        EXPECT_EQ(embedded.encode(text), original.encode(text)) << text;
    size_t q8 = 0;
    for (const TensorRecord& r : f.tensors) {
        EXPECT_EQ(r.name.rfind("text_encoders.llm.model.", 0), 0u) << r.name;
        q8 += r.dtype == DType::Q8_0;
    }
    EXPECT_EQ(q8, f.tensors.size());
}

TEST(ZImageGguf, RunsWithNoTokenizerFiles) {
    const std::string llm = qwen3_q8_0();
    const std::string folder = test::fixtures_dir() + "/reference/zimage";
    const std::string out = test::temp_path("sd_zimage_gguf_q8_0.png");
    const std::string command =
        "env -u SD_TOKENIZER_DIR " + quote(SD_CLI_PATH) + " --diffusion-model " +
        quote(test::fixture_file("zimage/zimage_turbo_d2_bf16_seed30.safetensors")) + " --llm " +
        quote(llm) + " --vae " + quote(test::fixture_file("flux/flux_ae_f32_seed11.safetensors")) +
        " -p 'a cinematic photograph of a hooded figure walking through a rainy city at night'"
        " --cfg-scale 1 --steps 4 -W 256 -H 256 -s 42 -t 2 -o " +
        quote(out) + " 2>&1";
    std::printf("%s\n", command.c_str());
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    image::Image got = image::read_image(out, 3);
    image::Image want = image::read_image(folder + "/zimage_turbo.png", 3);
    ASSERT_EQ(got.width, want.width);
    ASSERT_EQ(got.height, want.height);
    const double p = test::psnr(got.pixels, want.pixels);
    std::printf("zimage_turbo with a q8_0 Qwen3-4B: PSNR %.2f dB against the bf16 reference\n", p);
    RecordProperty("psnr_db", std::to_string(p));
    EXPECT_GE(p, 50.0);  // 56.4 dB measured
    std::remove(out.c_str());
}

}  // namespace
}  // namespace sd
