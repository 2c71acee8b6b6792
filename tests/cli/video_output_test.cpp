// sd-cli -M vid_gen's outputs on a tiny Wan: an -o with %d writes a PNG a frame, clip.avi an
// MJPEG AVI, clip.webp an animated WebP, clip.webm a WebM, and any other name the AVI beside
// it (as the reference program).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "api/tiny_wan.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "run_cli.h"

namespace sd {
namespace {

namespace fs = std::filesystem;

// Runs a 5-frame 32x32 video into `output` (in a folder of its own), with `extra` options;
// the folder.
fs::path run_video(const std::string& output, const std::vector<std::string>& extra = {},
                   const std::string& dit = test::tiny_wan_dit()) {
    static const std::string umt5 = test::tiny_t5(true, 16101);
    const fs::path dir = fs::path(testing::TempDir()) /
                         ("sd_video_out_" + std::to_string(::getpid()) + "_" + output.substr(0, 4));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::string> args = {"-M",
                                     "vid_gen",
                                     "--diffusion-model",
                                     dit,
                                     "--t5xxl",
                                     umt5,
                                     "--vae",
                                     test::fixture_file("wan/wan21_vae_f32_seed42.safetensors"),
                                     "--tokenizer-dir",
                                     test::fixtures_dir() + "/tokenizers",
                                     "-p",
                                     "a cat",
                                     "-W",
                                     "32",
                                     "-H",
                                     "32",
                                     "--video-frames",
                                     "5",
                                     "--steps",
                                     "1",
                                     "--fps",
                                     "8",
                                     "-t",
                                     "2",
                                     "-o",
                                     (dir / output).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const cli::RunResult r = cli::run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir;
}

int count_of(const std::vector<uint8_t>& bytes, const std::string& text) {
    int n = 0;
    for (auto it = bytes.begin();
         (it = std::search(it, bytes.end(), text.begin(), text.end())) != bytes.end(); ++it)
        ++n;
    return n;
}

TEST(CliVideo, APatternWritesAPngAFrame) {
    const fs::path dir = run_video("f_%02d.png");
    for (int i = 0; i < 5; ++i) {
        const fs::path frame = dir / ("f_0" + std::to_string(i) + ".png");
        ASSERT_TRUE(fs::exists(frame)) << frame;
        EXPECT_EQ(image::read_image(frame.string(), 3).width, 32u);
    }
    EXPECT_FALSE(fs::exists(dir / "f_05.png"));
    fs::remove_all(dir);
}

TEST(CliVideo, AviAnimatedWebpAndWebm) {
    fs::path dir = run_video("clip.avi");
    std::vector<uint8_t> avi = image::read_file_bytes((dir / "clip.avi").string());
    EXPECT_EQ(std::string(avi.begin() + 8, avi.begin() + 12), "AVI ");
    EXPECT_EQ(count_of(avi, "00dc"), 2 * 5);  // each frame's chunk and its index entry
    fs::remove_all(dir);

    dir = run_video("clip.webp");
    const std::vector<uint8_t> webp = image::read_file_bytes((dir / "clip.webp").string());
    EXPECT_EQ(std::string(webp.begin() + 8, webp.begin() + 12), "WEBP");
    EXPECT_EQ(count_of(webp, "ANMF"), 5);
    fs::remove_all(dir);

    dir = run_video("clip.webm");  // EBML, DocType "webm" (its structure: webm_writer_test)
    const std::vector<uint8_t> webm = image::read_file_bytes((dir / "clip.webm").string());
    EXPECT_EQ(std::vector<uint8_t>(webm.begin(), webm.begin() + 4),
              (std::vector<uint8_t>{0x1A, 0x45, 0xDF, 0xA3}));
    EXPECT_EQ(count_of(webm, "V_VP8"), 1);
    fs::remove_all(dir);

    dir = run_video("clip.png");  // no %d: the video, named .avi
    EXPECT_TRUE(fs::exists(dir / "clip.avi"));
    EXPECT_FALSE(fs::exists(dir / "clip.png"));
    fs::remove_all(dir);
}

// --control-video DIR on a VACE model: the folder's images in file name order are its
// control clip (here two of five frames; the rest grey), fitted to the size.
TEST(CliVideo, AVaceModelReadsAControlVideoFolder) {
    const fs::path frames =
        fs::path(testing::TempDir()) / ("sd_control_frames_" + std::to_string(::getpid()));
    fs::create_directories(frames);
    image::Image frame;
    frame.width = 48;
    frame.height = 40;
    frame.channels = 3;
    frame.pixels.assign(48 * 40 * 3, 200);
    image::write_image((frames / "b.png").string(), frame);
    frame.pixels.assign(48 * 40 * 3, 30);
    image::write_image((frames / "a.png").string(), frame);
    const std::string vace = test::tiny_wan_dit(16, test::kTinyWanText, 0, false, 900, 96);
    const fs::path dir = run_video(
        "vace_%d.png", {"--control-video", frames.string(), "--vace-strength", "0.8"}, vace);
    for (int i = 0; i < 5; ++i)
        EXPECT_TRUE(fs::exists(dir / ("vace_" + std::to_string(i) + ".png")));
    fs::remove_all(dir);
    // A folder that is not one is named with its option.
    const cli::RunResult bad = cli::run_cli({"-M", "vid_gen", "--diffusion-model", vace, "--t5xxl",
                                             test::tiny_t5(true, 16101), "--control-video",
                                             (frames / "missing").string(), "-p", "a cat"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.output.find("--control-video"), std::string::npos) << bad.output;
    fs::remove_all(frames);
}

}  // namespace
}  // namespace sd
