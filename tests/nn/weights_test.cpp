// Weight residency: Weights records the file pages behind what it binds, streamed layers
// drop their pages after each forward, and a released model leaves RSS (the values stay
// the same: the pages come back from the page cache).
#include <gtest/gtest.h>
#include <filesystem>
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

TEST_F(WeightsResidency, StreamedLayerDropsItsPagesAndKeepsItsValues) {
    const Tensor x = test::random_tensor({3, 8192}, 3);
    Linear resident = Linear::load(Weights(files_, "")["fc"], 8192, 2048);
    const Tensor want = resident.forward(x);

    Weights ws(files_, "", Residency::Streamed);
    Linear streamed = Linear::load(ws["fc"], 8192, 2048);
    ws.pages().release();
    resident.weight.storage()->release_pages();  // same file pages, other mapping view
    const size_t before = test::resident_bytes();
    for (int i = 0; i < 2; ++i) {
        test::expect_close(streamed.forward(x), want, 0, 0, "streamed forward");
        // The 64 MiB read by the forward are gone again (allow 8 MiB of other growth).
        EXPECT_LT(test::resident_bytes(), before + (size_t{8} << 20));
    }
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
