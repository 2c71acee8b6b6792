// Reading a model's configuration through Weights: a tensor's size (a missing one named with
// the model and the scope), the depth from numbered block names, and tensors a model knowingly
// leaves unread not reported as unused.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/log.h"
#include "io/io_test_util.h"
#include "nn/weights.h"
#include "test_util.h"

namespace sd {
namespace {

ModelFiles blocks_file() {
    std::map<std::string, Tensor> p;
    for (int i = 0; i < 3; ++i) p["blocks." + std::to_string(i) + ".w"] = Tensor::zeros({4, 2});
    p["blocks.5.w"] = Tensor::zeros({4, 2});  // after a gap: not counted
    p["stats.mean"] = Tensor::zeros({4});
    ModelFiles files;
    files.add(test::write_f32_safetensors(p, "weights_config"), ModelRole::DiffusionModel);
    return files;
}

TEST(WeightsConfig, SizesAndDepthFromTheNames) {
    const ModelFiles files = blocks_file();
    const Weights w(files, "model.diffusion_model.");
    EXPECT_EQ(w.count_numbered("blocks", "w"), 3);
    EXPECT_EQ(w.count_numbered("blocks", "bias"), 0);
    EXPECT_EQ(w.dim_of("blocks.0.w", 0, "Tiny"), 4);
    EXPECT_EQ(w.dim_of("blocks.0.w", 1, "Tiny"), 2);
    const std::string missing = test::error_of([&] { w.dim_of("blocks.9.w", 0, "Tiny"); });
    EXPECT_NE(missing.find("Tiny"), std::string::npos) << missing;
    EXPECT_NE(missing.find("blocks.9.w"), std::string::npos) << missing;
    EXPECT_THROW(w.dim_of("stats.mean", 1, "Tiny"), Error);  // 1-D
}

std::string g_warnings;
void keep_warnings(LogLevel level, const char* text, void*) {
    if (level == LogLevel::Warn) g_warnings += text;
}

TEST(WeightsConfig, SkippedTensorsAreNotReportedUnused) {
    const ModelFiles files = blocks_file();
    set_log_callback(keep_warnings, nullptr);
    g_warnings.clear();
    const Weights w(files, "model.diffusion_model.");
    for (int i : {0, 1, 2, 5}) w.get("blocks." + std::to_string(i) + ".w", {4, 2});
    w.skip("stats.mean");
    w.skip("not.there");  // absent: nothing to skip
    w.check("Tiny");
    const std::string quiet = g_warnings;
    g_warnings.clear();
    const Weights loud(files, "model.diffusion_model.");
    for (int i : {0, 1, 2, 5}) loud.get("blocks." + std::to_string(i) + ".w", {4, 2});
    loud.check("Tiny");
    set_log_callback(nullptr, nullptr);
    EXPECT_EQ(quiet.find("not used"), std::string::npos) << quiet;
    EXPECT_NE(g_warnings.find("1 tensors of the checkpoint are not used"), std::string::npos)
        << g_warnings;
}

}  // namespace
}  // namespace sd
