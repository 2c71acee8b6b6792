// Outputs that cannot be written (issue 28's disk-full and read-only cases), through sd-cli:
// a full disk (the file size limit of `ulimit -f`, with SIGXFSZ ignored, so each write past it
// fails with EFBIG as a full disk's fails with ENOSPC) for an image and a -M convert;
// an unwritable folder (a folder without write permission, as another user when the tests run
// as root; /proc where that user cannot reach the program); a path under a regular file; an
// output path that is a folder. Each gives one error naming the path and leaves neither the
// final file nor the temporary ".part" one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "esrgan_files.h"
#include "fixture_files.h"
#include "image/image_io.h"
#include "io/io_test_util.h"

namespace {

namespace fs = std::filesystem;
using cli::run_cli;
using cli::RunResult;

// Past 4 KiB a write fails with "File too large".
const std::string kFullDisk = "trap '' XFSZ; ulimit -f 4; exec ";

struct Inputs {
    std::string model = sd::test::temp_path("outfail_esrgan_x2.safetensors");
    std::string image = sd::test::temp_path("outfail_in.png");
    Inputs() {
        sd::test::TinyEsrgan t;
        t.upsamples = 1;
        sd::test::write_tiny_esrgan(model, t, 9);
        sd::image::Image img{64, 64, 3, {}};
        for (uint32_t i = 0; i < 64u * 64u * 3u; ++i)
            img.pixels.push_back(static_cast<uint8_t>((i * 37u) ^ (i >> 5)));
        sd::image::write_image(image, img);
    }
};

const Inputs& inputs() {
    static const Inputs i;
    return i;
}

RunResult upscale(const std::string& out, const std::string& prefix = "") {
    return run_cli(
        {"-M", "upscale", "--upscale-model", inputs().model, "-i", inputs().image, "-o", out}, "",
        prefix);
}

// The run failed naming `path`, and left neither it nor its ".part".
void expect_clean_failure(const RunResult& r, const std::string& path, const std::string& why) {
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(path + ".part")) << path;
}

TEST(CliOutputFailures, AFullDiskLeavesNoImage) {
    const std::string out = sd::test::temp_path("outfail_full.png");
    fs::remove(out);
    const RunResult ok = upscale(out);
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    ASSERT_GT(fs::file_size(out), 4096u);  // the image needs more than the limit
    fs::remove(out);
    const RunResult full = upscale(out, kFullDisk);
    expect_clean_failure(full, out, "File too large");
    EXPECT_FALSE(fs::exists(out));
}

TEST(CliOutputFailures, AFullDiskLeavesNoConvertedModel) {
    const std::string out = sd::test::temp_path("outfail_full.gguf");
    fs::remove(out);
    const RunResult r =
        run_cli({"-M", "convert", "-m", sd::test::fixture_file("taesd_f32_seed5.safetensors"), "-o",
                 out, "--type", "q8_0"},
                "", kFullDisk);
    expect_clean_failure(r, out, "File too large");
    EXPECT_FALSE(fs::exists(out));
}

// An earlier, finished file of that name stays as it was.
TEST(CliOutputFailures, AFailedWriteKeepsTheFileItWouldReplace) {
    const std::string out = sd::test::temp_path("outfail_keep.png");
    ASSERT_EQ(upscale(out).exit_code, 0);
    const auto before = fs::file_size(out);
    const RunResult full = upscale(out, kFullDisk);
    expect_clean_failure(full, out, "File too large");
    ASSERT_TRUE(fs::exists(out));
    EXPECT_EQ(fs::file_size(out), before);
    EXPECT_NO_THROW(sd::image::read_image(out, 3));
}

TEST(CliOutputFailures, AnUnwritableFolder) {
    const std::string dir = sd::test::temp_path("outfail_readonly");
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                             fs::perms::group_exec | fs::perms::others_read |
                             fs::perms::others_exec);
    std::string out = dir + "/out.png";
    std::string prefix;
    if (::geteuid() == 0) {
        // Root writes anywhere: run as nobody, if nobody can reach the program and the inputs.
        const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
        const RunResult reach = run_cli({"--version"}, "", as_nobody + "exec ");
        if (reach.exit_code == 0 && ::access(inputs().model.c_str(), R_OK) == 0) {
            prefix = as_nobody + "exec ";
        } else {
            out = "/proc/sd_outfail/out.png";  // no one creates files in /proc
        }
    }
    const RunResult r = upscale(out, prefix);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(out), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".part"));
    fs::permissions(dir, fs::perms::owner_all);
}

TEST(CliOutputFailures, AFolderThatIsAFileOrAnOutputThatIsAFolder) {
    const std::string file = sd::test::write_temp("outfail_plain_file", "not a folder");
    const RunResult under_file = upscale(file + "/out.png");
    EXPECT_NE(under_file.exit_code, 0);
    EXPECT_NE(under_file.output.find(file), std::string::npos) << under_file.output;
    EXPECT_FALSE(fs::exists(file + "/out.png.part"));
    const std::string folder = sd::test::temp_path("outfail_folder.png");
    fs::create_directories(folder);
    const RunResult onto_folder = upscale(folder);
    expect_clean_failure(onto_folder, folder, "Is a directory");
    EXPECT_TRUE(fs::is_directory(folder));
}

}  // namespace
