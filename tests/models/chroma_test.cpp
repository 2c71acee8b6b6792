// Chroma: where each block's modulation vectors sit in the approximator's table (hand values
// of the reference's layout), the distilled guidance layer's table of a tiny random
// approximator, and a tiny random Chroma DiT (1 double + 1 single block, width 128) with and
// without its text mask, against the independent numpy implementation in chroma_reference.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/chroma_approximator.h"
#include "models/flux.h"
#include "nn/weight_patch.h"
#include "test_util.h"
#include "tiny_flux.h"

namespace sd {
namespace {

using test::Params;
using test::tiny_chroma;

// chroma_reference.py's output for `model` and `in` (`table` for the modulation table), `n`
// values.
Tensor numpy_output(const std::string& model, const Params& in, const std::string& name,
                    const Shape& shape, bool table) {
    const std::string inputs = test::write_f32_safetensors(in, name + "_inputs");
    const std::string out_path = test::temp_path(name + "_out.f32");
    const std::string cmd = "/usr/bin/python3 " + test::tests_source_dir() +
                            "/models/chroma_reference.py " + model + " " + inputs + " " + out_path +
                            (table ? " table" : "");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::vector<float> want(static_cast<size_t>(shape.numel()));
    std::ifstream f(out_path, std::ios::binary);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    std::remove(out_path.c_str());
    return Tensor::from_vector(shape, want);
}

Weights dit_weights(ModelFiles& files, const std::string& path) {
    files.add(path, ModelRole::DiffusionModel);
    return Weights(files, "model.diffusion_model.");
}

TEST(ChromaModulation, RowsOfEachBlockAreTheReferencesLayout) {
    // 38 single blocks x 3, then 19 double blocks x 6 for the image stream, then for the
    // text stream, then the final layer's 2: 344 rows whatever the model's depth.
    EXPECT_EQ(kChromaModulations, 344);
    EXPECT_EQ(chroma_single_row(0), 0);
    EXPECT_EQ(chroma_single_row(37), 111);
    EXPECT_EQ(chroma_double_img_row(0), 114);
    EXPECT_EQ(chroma_double_img_row(1), 120);
    EXPECT_EQ(chroma_double_txt_row(0), 228);
    EXPECT_EQ(chroma_double_txt_row(18), 336);
    EXPECT_EQ(chroma_final_row(), 342);
    // A block's rows as one [1, k hidden] vector, chunk j = row first + j.
    const Tensor table = test::random_tensor({kChromaModulations, 4}, 1);
    const std::vector<float> all = table.to_vector(), got = chroma_rows(table, 114, 6).to_vector();
    ASSERT_EQ(got.size(), 24u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], all[114 * 4 + i]) << i;
}

TEST(ChromaModulation, InputRowsAreTimeGuidanceAndIndexEmbeddings) {
    // t = 0 and guidance 0: cos 1 then sin 0 in both 16-wide embeddings; row i's index
    // embedding starts with cos(1000 i) (frequency 1).
    const std::vector<float> in = chroma_approximator_input(0.0f, 0.0f).to_vector();
    ASSERT_EQ(in.size(), static_cast<size_t>(kChromaModulations * 64));
    for (int row : {0, 5, 343}) {
        const float* r = in.data() + row * 64;
        for (int j = 0; j < 8; ++j) {
            EXPECT_EQ(r[j], 1.0f) << row;
            EXPECT_EQ(r[8 + j], 0.0f) << row;
            EXPECT_EQ(r[16 + j], 1.0f) << row;
            EXPECT_EQ(r[24 + j], 0.0f) << row;
        }
        EXPECT_NEAR(r[32], std::cos(1000.0f * row), 1e-6) << row;
        EXPECT_NEAR(r[48], std::sin(1000.0f * row), 1e-6) << row;
    }
}

TEST(ChromaModulation, TableMatchesNumpy) {
    const std::string model = test::write_f32_safetensors(tiny_chroma(1, 1, 2), "chroma_table");
    ModelFiles files;
    const ChromaApproximator a =
        ChromaApproximator::load(dit_weights(files, model)["distilled_guidance_layer"], 128);
    EXPECT_EQ(a.layers.size(), 2u);
    Params in;
    in["t"] = Tensor::from_vector({1}, {0.7f});
    in["guidance"] = Tensor::from_vector({1}, {0.3f});
    const Tensor got = a.forward(chroma_approximator_input(0.7f, 0.3f));
    test::expect_close(got,
                       numpy_output(model, in, "chroma_table", {kChromaModulations, 128}, true),
                       2e-4, 2e-4, "table");
}

TEST(ChromaModulation, TableComputesTheRowsTheModelReads) {
    // The full model reads every row; a shallow one its blocks' and the final layer's.
    std::vector<int64_t> all = chroma_rows_used(kChromaDoubleBlocks, kChromaSingleBlocks);
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), static_cast<size_t>(kChromaModulations));
    for (int64_t r = 0; r < kChromaModulations; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], r);
    const std::vector<int64_t> some = chroma_rows_used(1, 1);
    EXPECT_EQ(some, (std::vector<int64_t>{0, 1, 2, 114, 115, 116, 117, 118, 119, 228, 229, 230, 231,
                                          232, 233, 342, 343}));
    // Those rows as the whole table has them, the others 0; kept for the same timestep.
    const std::string model = test::write_f32_safetensors(tiny_chroma(1, 1, 2), "chroma_rows");
    ModelFiles files;
    const ChromaApproximator a =
        ChromaApproximator::load(dit_weights(files, model)["distilled_guidance_layer"], 128);
    const ChromaModulationTable table(some);
    const Tensor got = table.get(a, 0.4f, 0.0f);
    const std::vector<float> full = a.forward(chroma_approximator_input(0.4f, 0.0f)).to_vector();
    const std::vector<float> v = got.to_vector();
    for (int64_t r = 0; r < kChromaModulations; ++r) {
        const bool used = std::find(some.begin(), some.end(), r) != some.end();
        for (int64_t j = 0; j < 128; ++j) {
            const size_t at = static_cast<size_t>(r * 128 + j);
            EXPECT_NEAR(v[at], used ? full[at] : 0.0f, 1e-5) << r << " " << j;
        }
    }
    EXPECT_EQ(table.get(a, 0.4f, 0.0f).data_ptr(), got.data_ptr());  // kept
    {
        const ScopedWeightPatches lora(nullptr);  // another generation's LoRAs: made again
        EXPECT_NE(table.get(a, 0.4f, 0.0f).data_ptr(), got.data_ptr());
    }
}

TEST(ChromaModel, TinyModelMatchesNumpyWithAndWithoutMask) {
    const std::string model = test::write_f32_safetensors(tiny_chroma(1, 1, 2), "chroma_tiny");
    ModelFiles files;
    const FluxModel chroma = FluxModel::load(dit_weights(files, model));
    EXPECT_TRUE(chroma.config().chroma);
    EXPECT_EQ(chroma.config().vec_dim, 0);
    Params in;
    in["x"] = test::random_tensor({1, 16, 6, 5}, 11);
    in["t"] = Tensor::from_vector({1}, {0.7f});
    in["context"] = test::random_tensor({1, 5, 32}, 12);
    in["guidance"] = Tensor::from_vector({1}, {3.5f});  // read as 0
    const Tensor plain = chroma.forward(in.at("x"), in.at("t"), in.at("context"), {}, 3.5f);
    test::expect_close(plain, numpy_output(model, in, "chroma_tiny", in.at("x").shape(), false),
                       2e-4, 2e-4, "no mask");
    const Tensor mask = Tensor::from_vector({5}, {0.0f, 0.0f, -INFINITY, 0.0f, -INFINITY});
    in["mask"] = mask;
    const Tensor masked =
        chroma.forward(in.at("x"), in.at("t"), in.at("context"), {}, 3.5f, {}, {}, mask);
    test::expect_close(masked, numpy_output(model, in, "chroma_tiny", in.at("x").shape(), false),
                       2e-4, 2e-4, "mask");
    // Finite values other than 0 are added to the scores as given.
    const Tensor soft = Tensor::from_vector({5}, {0.0f, -1.0f, -INFINITY, 0.5f, 0.0f});
    in["mask"] = soft;
    test::expect_close(
        chroma.forward(in.at("x"), in.at("t"), in.at("context"), {}, 3.5f, {}, {}, soft),
        numpy_output(model, in, "chroma_tiny", in.at("x").shape(), false), 2e-4, 2e-4, "soft");
    double diff = 0;
    const std::vector<float> a = plain.to_vector(), b = masked.to_vector();
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double(a[i] - b[i])));
    EXPECT_GT(diff, 1e-3) << "the mask changed nothing";
    // A mask of another length is an error, not a crash.
    EXPECT_THROW(chroma.forward(in.at("x"), in.at("t"), in.at("context"), {}, 0.0f, {}, {},
                                Tensor::zeros({4})),
                 Error);
}

TEST(ChromaModel, ApproximatorOfAnotherInputWidthIsNamed) {
    Params p = tiny_chroma(1, 1, 1);
    p["distilled_guidance_layer.in_proj.weight"] = Tensor::zeros({32, 48});
    const std::string path = test::write_f32_safetensors(p, "chroma_bad");
    ModelFiles files;
    const std::string error = test::error_of([&] { FluxModel::load(dit_weights(files, path)); });
    EXPECT_NE(error.find("in_proj.weight"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
