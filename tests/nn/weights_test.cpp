// Weight residency: Weights records the file pages behind what it binds, streamed layers
// drop their pages after each forward, and a released model leaves RSS (the values stay
// the same: the pages come back from the page cache).
#include <gtest/gtest.h>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/model_files.h"
#include "io/tensor_writer.h"
#include "nn/layers.h"
#include "test_util.h"

namespace sd {
namespace {

class WeightsResidency : public ::testing::Test {
  protected:
    void SetUp() override {
        path_ = (std::filesystem::temp_directory_path() /
                 ("sd_weights_test_" + std::to_string(getpid()) + ".safetensors"))
                    .string();
        // A 2048 x 8192 f32 weight (64 MiB): large enough to see in RSS.
        weight_ = test::random_tensor({2048, 8192}, 1);
        bias_ = test::random_tensor({2048}, 2);
        const Tensor w = weight_, b = bias_;
        write_safetensors(
            path_, {{"fc.weight", DType::F32, w.shape(), [w] { return w; }},
                    {"fc.bias", DType::F16, b.shape(), [b] { return convert(b, DType::F16); }}});
        files_.add(path_, ModelRole::Checkpoint);
    }
    void TearDown() override { std::filesystem::remove(path_); }

    std::string path_;
    Tensor weight_, bias_;
    ModelFiles files_;
};

TEST_F(WeightsResidency, PagesCoverFileBackedTensorsOnly) {
    Weights w(files_, "");
    Linear fc = Linear::load(w["fc"], 8192, 2048);
    // The f32 weight is a view of the file; the f16 bias was converted into owned memory.
    EXPECT_EQ(w.pages().bytes(), size_t{2048} * 8192 * 4);
    EXPECT_FALSE(fc.streamed);
    EXPECT_TRUE(Linear::load(Weights(files_, "", Residency::Streamed)["fc"], 8192, 2048).streamed);
}

// Rss of this process's mappings of `path` (/proc/self/smaps), in bytes.
size_t mapped_rss(const std::string& path) {
    std::ifstream smaps("/proc/self/smaps");
    size_t total = 0;
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        if (line.empty()) continue;
        if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < 16) {
            inside = line.size() >= path.size() &&
                     line.compare(line.size() - path.size(), path.size(), path) == 0;
        } else if (inside && line.rfind("Rss:", 0) == 0) {
            total += std::stoull(line.substr(4)) * 1024;
        }
    }
    return total;
}

TEST_F(WeightsResidency, StreamedLayerReadsTheFileAndKeepsItsValues) {
    const Tensor x = test::random_tensor({3, 8192}, 3);
    Linear resident = Linear::load(Weights(files_, "")["fc"], 8192, 2048);
    const Tensor want = resident.forward(x);
    EXPECT_GT(mapped_rss(path_), size_t{60} << 20);  // the resident forward mapped it in
    resident.weight.storage()->release_pages();
    EXPECT_LT(mapped_rss(path_), size_t{1} << 20);

    Weights ws(files_, "", Residency::Streamed);
    Linear streamed = Linear::load(ws["fc"], 8192, 2048);
    for (int i = 0; i < 2; ++i) {
        test::expect_close(streamed.forward(x), want, 0, 0, "streamed forward");
        // The weight came through the scratch buffer: its file pages stay out of RSS.
        EXPECT_LT(mapped_rss(path_), size_t{1} << 20);
    }
    // A non-contiguous weight is used in place and its pages dropped after.
    Linear strided = streamed;
    strided.weight = streamed.weight.transpose(0, 1).transpose(0, 1).narrow(1, 0, 4096);
    const Tensor x2 = x.narrow(1, 0, 4096).contiguous();
    test::expect_close(strided.forward(x2),
                       linear(x2, resident.weight.narrow(1, 0, 4096), resident.bias), 0, 0,
                       "in place");
    EXPECT_LT(mapped_rss(path_), size_t{1} << 20);
}

TEST_F(WeightsResidency, ReleasedModelLeavesRss) {
    Weights w(files_, "");
    Linear fc = Linear::load(w["fc"], 8192, 2048);
    const Tensor x = test::random_tensor({3, 8192}, 4);
    const Tensor want = fc.forward(x);  // touches every page of the weight
    const size_t touched = test::resident_bytes();
    w.pages().release();
    EXPECT_LT(test::resident_bytes() + (size_t{48} << 20), touched);
    test::expect_close(fc.forward(x), want, 0, 0, "after release");
}

}  // namespace
}  // namespace sd
