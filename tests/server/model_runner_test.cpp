// The server's ModelRunner on a tiny Wan: a vid_gen job is one container file of its frames
// (the count the library aligned to 1 + 4k), in the format asked; an img_gen job on the same
// model stays a list of images.
#include "model_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/tiny_wan.h"
#include "base/base64.h"
#include "fixture_files.h"
#include "request_test_util.h"
#include "requests.h"

namespace server {
namespace {

using nlohmann::json;

cli::CliParams tiny_wan_defaults() {
    static const std::string dit = sd::test::tiny_wan_dit();
    static const std::string umt5 = sd::test::tiny_t5(true, 16101);
    static const std::string vae = sd::test::fixture_file("wan/wan21_vae_f32_seed42.safetensors");
    static const std::string tokenizers = sd::test::fixtures_dir() + "/tokenizers";
    return test::defaults_from({"--diffusion-model", dit.c_str(), "--t5xxl", umt5.c_str(), "--vae",
                                vae.c_str(), "--tokenizer-dir", tokenizers.c_str(), "-W", "32",
                                "-H", "32", "--steps", "1", "-t", "2"});
}

std::vector<uint8_t> decoded(const ResultImage& r) {
    auto bytes = sd::base64_decode(r.b64);
    return bytes ? *bytes : std::vector<uint8_t>();
}

TEST(ModelRunnerVideo, AVidGenJobIsOneContainerOfItsFrames) {
    const cli::CliParams defaults = tiny_wan_defaults();
    std::unique_ptr<ModelRunner> runner = ModelRunner::load(defaults);
    ASSERT_TRUE(runner);
    EXPECT_TRUE(runner->makes_video());
    ServerLimits limits;
    limits.min_side = 16;
    const ParseContext ctx{defaults, limits};

    JobSpec spec = parse_native_video_request(
        json{{"prompt", "a cat"}, {"video_frames", 6}, {"fps", 8}, {"seed", 3}}, ctx);
    RunOutcome out = runner->run(spec, RunHooks{});
    ASSERT_TRUE(out.ok) << out.error;
    ASSERT_EQ(out.images.size(), 1u);
    const ResultImage& clip = out.images[0];
    EXPECT_EQ(clip.frames, 5);  // 6 aligned down to 1 + 4k, as the reference
    EXPECT_EQ(clip.width, 32u);
    EXPECT_EQ(clip.height, 32u);
    EXPECT_EQ(clip.seed, 3);
    EXPECT_NE(clip.parameters.find("a cat"), std::string::npos) << clip.parameters;
    const std::vector<uint8_t> webm = decoded(clip);
    ASSERT_GT(webm.size(), 4u);
    EXPECT_EQ(std::vector<uint8_t>(webm.begin(), webm.begin() + 4),
              (std::vector<uint8_t>{0x1A, 0x45, 0xDF, 0xA3}));  // EBML

    spec = parse_native_video_request(
        json{{"prompt", "a cat"}, {"video_frames", 5}, {"output_format", "avi"}}, ctx);
    out = runner->run(spec, RunHooks{});
    ASSERT_TRUE(out.ok) << out.error;
    ASSERT_EQ(out.images.size(), 1u);
    EXPECT_EQ(out.images[0].frames, 5);
    const std::vector<uint8_t> avi = decoded(out.images[0]);
    ASSERT_GT(avi.size(), 12u);
    EXPECT_EQ(std::string(avi.begin(), avi.begin() + 4), "RIFF");
    EXPECT_EQ(std::string(avi.begin() + 8, avi.begin() + 12), "AVI ");

    // The same model's img_gen job: images, as any model's.
    spec = parse_native_request(json{{"prompt", "a cat"}}, ctx);
    out = runner->run(spec, RunHooks{});
    ASSERT_TRUE(out.ok) << out.error;
    ASSERT_EQ(out.images.size(), 1u);
    EXPECT_EQ(out.images[0].frames, 0);
}

}  // namespace
}  // namespace server
