// The importance matrix: collected while generate_image runs on the SD 1.5 fixture, saved and
// loaded in the llama.cpp / stable-diffusion.cpp imatrix format, and used by convert() for
// importance-weighted k-quants and iq4 - which must lower the importance-weighted RMSE of a
// quantized fixture tensor. Hostile imatrix files are refused with a message naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "io/imatrix.h"
#include "io/io_test_util.h"
#include "io/model_files.h"
#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "ops/convert.h"
#include "stable-diffusion.h"
#include "tensor/quant.h"
#include "tensor/quant_importance.h"
#include "test_util.h"

namespace sd {
namespace {

const char* const kContextKey =
    "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight";  // [320, 768]
const char* const kFeedForward =
    "model.diffusion_model.input_blocks.1.1.transformer_blocks.0.ff.net.2.weight";  // [320, 1280]

const DType kWeightedTypes[] = {DType::Q2_K, DType::Q3_K,   DType::Q4_K,  DType::Q5_K,
                                DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

struct Log {
    std::string text;
};

class Imatrix : public testing::Test {
  protected:
    void SetUp() override {
        sd_set_log_callback(
            [](sd_log_level_t, const char* t, void* d) { static_cast<Log*>(d)->text += t; }, &log_);
        imatrix::clear();
    }
    void TearDown() override {
        disable_imatrix_collection();
        imatrix::clear();
        sd_set_log_callback(nullptr, nullptr);
    }
    Log log_;
};

// sqrt(sum_r sum_j w_j (x - q)^2 / (rows * sum_j w_j)) of `rows` rows of `cols` values.
double weighted_rmse(const std::vector<float>& x, const std::vector<float>& q,
                     const std::vector<float>& w, int64_t rows, int64_t cols) {
    double num = 0, wsum = 0;
    for (int64_t j = 0; j < cols; ++j) wsum += w[static_cast<size_t>(j)];
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
            const size_t i = static_cast<size_t>(r * cols + j);
            const double d = double(x[i]) - q[i];
            num += w[static_cast<size_t>(j)] * d * d;
        }
    return std::sqrt(num / (static_cast<double>(rows) * wsum));
}

// Quantizes and dequantizes rows x cols values of `type`, with or without importance.
std::vector<float> round_trip(DType type, const std::vector<float>& x, int64_t rows, int64_t cols,
                              const float* importance) {
    const size_t row_size = row_bytes(type, cols);
    std::vector<uint8_t> q(row_size * static_cast<size_t>(rows));
    std::vector<float> back(x.size());
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* dst = q.data() + row_size * static_cast<size_t>(r);
        if (importance)
            quantize_row_weighted(type, x.data() + r * cols, dst, cols, importance);
        else
            quantize_row(type, x.data() + r * cols, dst, cols);
        dequantize_row(type, dst, back.data() + r * cols, cols);
    }
    return back;
}

struct Gain {
    double plain, weighted;
};

Gain compare(DType type, const std::vector<float>& x, int64_t rows, int64_t cols,
             const std::vector<float>& importance) {
    return {weighted_rmse(x, round_trip(type, x, rows, cols, nullptr), importance, rows, cols),
            weighted_rmse(x, round_trip(type, x, rows, cols, importance.data()), importance, rows,
                          cols)};
}

TEST_F(Imatrix, CollectedOnTheFixtureSavedLoadedAndLowersTheWeightedError) {
    const std::string model = test::generated_checkpoint("sd15", "f16", 1);
    ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
    sd_ctx_params_t cp;
    sd_ctx_params_init(&cp);
    cp.model_path = model.c_str();
    cp.n_threads = 2;
    sd_ctx_t* ctx = new_sd_ctx(&cp);
    ASSERT_NE(ctx, nullptr) << log_.text;
    sd_img_gen_params_t p;
    sd_img_gen_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 64;
    p.sample_params.sample_steps = 2;
    sd_image_t* images = nullptr;
    int count = 0;

    // Nothing is recorded while collection is off.
    ASSERT_TRUE(generate_image(ctx, &p, &images, &count)) << log_.text;
    free_sd_images(images, count);
    EXPECT_EQ(imatrix::entry_count(), 0u);

    enable_imatrix_collection();
    ASSERT_TRUE(generate_image(ctx, &p, &images, &count)) << log_.text;
    disable_imatrix_collection();
    free_sd_images(images, count);
    free_sd_ctx(ctx);
    EXPECT_GT(imatrix::entry_count(), 100u);
    const std::vector<float> context = imatrix::importance(kContextKey);
    const std::vector<float> ff = imatrix::importance(kFeedForward);
    ASSERT_EQ(context.size(), 768u);
    ASSERT_EQ(ff.size(), 1280u);
    EXPECT_EQ(imatrix::importance("cond_stage_model.transformer.text_model.encoder.layers.0.mlp."
                                  "fc1.weight")
                  .size(),
              768u);
    EXPECT_EQ(imatrix::importance("first_stage_model.decoder.conv_in.weight").size(), 4u * 9u);

    // Saved and loaded back: the same importances (f32 rounding of the saved means).
    const std::string file = test::temp_path("fixture.imatrix.dat");
    save_imatrix(file.c_str());
    imatrix::clear();
    ASSERT_TRUE(load_imatrix(file.c_str())) << log_.text;
    const std::vector<float> loaded = imatrix::importance(kContextKey);
    ASSERT_EQ(loaded.size(), context.size());
    for (size_t j = 0; j < loaded.size(); ++j)
        EXPECT_NEAR(loaded[j], context[j], 1e-5 * context[j] + 1e-30) << j;

    // The fixture tensors quantized with and without their importance.
    ModelFiles files;
    files.add(model, ModelRole::Checkpoint);
    for (const char* name : {kContextKey, kFeedForward}) {
        Tensor w = convert(files.get(name).load(), DType::F32).contiguous();
        const int64_t rows = w.size(0), cols = w.size(1);
        const std::vector<float> x = w.to_vector();
        const std::vector<float> imp = imatrix::importance(name);
        for (DType type : kWeightedTypes) {
            const Gain g = compare(type, x, rows, cols, imp);
            std::printf("%s %-7s weighted RMSE %.6g -> %.6g with the imatrix (%.2f%% lower)\n",
                        name, dtype_name(type), g.plain, g.weighted,
                        100.0 * (1.0 - g.weighted / g.plain));
            EXPECT_LT(g.weighted, g.plain) << name << " " << dtype_name(type);
        }
    }
}

// Columns of very different importance: the weighted search must trade the unimportant
// columns' error for the important ones'.
TEST_F(Imatrix, WeightedQuantizationFavoursImportantColumns) {
    const int64_t rows = 16, cols = 512;
    const std::vector<float> x = test::random_tensor({rows, cols}, 11).to_vector();
    std::vector<float> imp(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j)
        imp[static_cast<size_t>(j)] = std::pow(10.0f, 3.0f * ((j * 37) % 101) / 100.0f);
    for (DType type : kWeightedTypes) {
        const Gain g = compare(type, x, rows, cols, imp);
        std::printf("synthetic %-7s weighted RMSE %.6g -> %.6g (%.2f%% lower)\n", dtype_name(type),
                    g.plain, g.weighted, 100.0 * (1.0 - g.weighted / g.plain));
        EXPECT_LT(g.weighted, 0.97 * g.plain) << dtype_name(type);
    }
    // Without importance the plain quantizer runs.
    std::vector<uint8_t> a(row_bytes(DType::Q4_K, cols)), b(a.size());
    quantize_row_weighted(DType::Q4_K, x.data(), a.data(), cols, nullptr);
    quantize_row(DType::Q4_K, x.data(), b.data(), cols);
    EXPECT_EQ(a, b);
    EXPECT_FALSE(has_weighted_quantization(DType::Q8_0));
}

TEST_F(Imatrix, ConvertQuantizesWithTheLoadedImatrix) {
    const char* name = "model.diffusion_model.middle_block.1.proj_in.weight";
    const Tensor w = test::random_tensor({8, 512}, 21);
    const std::string ckpt = test::temp_path("imatrix_model.safetensors");
    write_safetensors(ckpt, {{name, w.dtype(), w.shape(), [w] { return w; }}});
    std::vector<double> sums(512);
    for (size_t j = 0; j < sums.size(); ++j) sums[j] = 1.0 + double((j * 53) % 97) * 10;
    imatrix::add(name, sums.data(), 512, 1);
    const std::string file = test::temp_path("convert.imatrix.dat");
    imatrix::save(file);
    imatrix::clear();

    const std::string plain = test::temp_path("plain_q4k.gguf");
    ASSERT_TRUE(convert(ckpt.c_str(), nullptr, plain.c_str(), SD_TYPE_Q4_K, nullptr, false));
    ASSERT_TRUE(load_imatrix(file.c_str())) << log_.text;
    const std::string weighted = test::temp_path("weighted_q4k.gguf");
    ASSERT_TRUE(convert(ckpt.c_str(), nullptr, weighted.c_str(), SD_TYPE_Q4_K, nullptr, false));
    EXPECT_NE(log_.text.find("quantized 1 tensors with importance-matrix weights"),
              std::string::npos)
        << log_.text;

    const std::vector<float> imp = imatrix::importance(name);
    ASSERT_EQ(imp.size(), 512u);
    const std::vector<float> x = w.to_vector();
    auto read = [&](const std::string& path) {
        TensorFile f = open_tensor_file(path);
        Tensor t = f.find(name)->load();
        EXPECT_EQ(t.dtype(), DType::Q4_K);
        return convert(t, DType::F32).to_vector();
    };
    const double e_plain = weighted_rmse(x, read(plain), imp, 8, 512);
    const double e_weighted = weighted_rmse(x, read(weighted), imp, 8, 512);
    EXPECT_LT(e_weighted, e_plain);
    EXPECT_EQ(read(weighted), round_trip(DType::Q4_K, x, 8, 512, imp.data()));
}

// The GGUF layout of llama.cpp's imatrix tool: written for a .gguf path, read by content.
TEST_F(Imatrix, GgufFilesRoundTrip) {
    std::vector<double> a(256), b(512);
    for (size_t j = 0; j < a.size(); ++j) a[j] = 1.0 + double(j % 5);
    for (size_t j = 0; j < b.size(); ++j) b[j] = 0.5 * double(j % 9);
    imatrix::add("a.weight", a.data(), 256, 4);
    imatrix::add("a.weight", a.data(), 256, 4);
    imatrix::add("b.weight", b.data(), 512, 2);
    const std::vector<float> want_a = imatrix::importance("a.weight");
    const std::vector<float> want_b = imatrix::importance("b.weight");
    const std::string file = test::temp_path("round.imatrix.gguf");
    EXPECT_EQ(imatrix::save(file), 2u);
    const TensorFile f = open_tensor_file(file);
    EXPECT_EQ(f.format, "gguf");
    EXPECT_EQ(std::get<std::string>(f.metadata.at("general.type").value), "imatrix");
    ASSERT_NE(f.find("a.weight.in_sum2"), nullptr);
    EXPECT_EQ(f.find("a.weight.in_sum2")->shape, (Shape{1, 256}));
    EXPECT_EQ(f.find("a.weight.counts")->load().item(), 8.0f);
    imatrix::clear();
    EXPECT_EQ(imatrix::load(file), 2u);
    const std::vector<float> got_a = imatrix::importance("a.weight");
    const std::vector<float> got_b = imatrix::importance("b.weight");
    ASSERT_EQ(got_a.size(), want_a.size());
    ASSERT_EQ(got_b.size(), want_b.size());
    for (size_t j = 0; j < got_a.size(); ++j) EXPECT_FLOAT_EQ(got_a[j], want_a[j]) << j;
    for (size_t j = 0; j < got_b.size(); ++j) EXPECT_FLOAT_EQ(got_b[j], want_b[j]) << j;

    // A GGUF that is not an imatrix, and one whose sums have no counts.
    const std::string model = test::temp_path("not_imatrix.gguf");
    const Tensor t = test::random_tensor({2, 32}, 3);
    write_gguf(model, {{"x.in_sum2", t.dtype(), t.shape(), [t] { return t; }}});
    EXPECT_FALSE(load_imatrix(model.c_str()));
    EXPECT_NE(log_.text.find("not an imatrix"), std::string::npos) << log_.text;
    const std::string no_counts = test::temp_path("no_counts.gguf");
    write_gguf(no_counts, {{"x.in_sum2", t.dtype(), t.shape(), [t] { return t; }}},
               {{"general.type", MetadataValue{std::string("imatrix")}}});
    EXPECT_FALSE(load_imatrix(no_counts.c_str()));
    EXPECT_NE(log_.text.find("x.counts"), std::string::npos) << log_.text;

    // Counts are whole numbers of rows: a tiny fractional one made an infinite importance
    // (found by fuzz_replay_imatrix: fuzz/regressions/imatrix/fractional_count.gguf).
    const std::string fractional = test::temp_path("fractional_count.gguf");
    const Tensor sums = Tensor::from_vector(Shape{1, 4}, {3e38f, 1.0f, 2.0f, 3.0f});
    const Tensor counts = Tensor::from_vector(Shape{1}, {1e-30f});
    write_gguf(fractional,
               {{"x.in_sum2", sums.dtype(), sums.shape(), [sums] { return sums; }},
                {"x.counts", counts.dtype(), counts.shape(), [counts] { return counts; }}},
               {{"general.type", MetadataValue{std::string("imatrix")}}});
    EXPECT_FALSE(load_imatrix(fractional.c_str()));
    EXPECT_NE(log_.text.find("entry 'x' has sum 3e+38, count 1e-30 at column 0"), std::string::npos)
        << log_.text;
    EXPECT_TRUE(imatrix::importance("x").empty());  // nothing half-loaded
}

TEST_F(Imatrix, BadFilesAndCallsFailWithTheirName) {
    EXPECT_FALSE(load_imatrix(nullptr));
    EXPECT_FALSE(load_imatrix("/no/such/file.dat"));
    EXPECT_NE(log_.text.find("/no/such/file.dat"), std::string::npos);
    auto i32 = [](int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
    auto f32 = [](float v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
    const std::string cases[] = {
        "",                                                              // empty
        i32(0),                                                          // no entries
        i32(1) + i32(-5),                                                // negative name length
        i32(1) + i32(3) + "abc" + i32(1) + i32(1 << 30),                 // absurd value count
        i32(1) + i32(3) + "abc" + i32(1) + i32(4) + f32(1) + f32(2),     // truncated values
        i32(1) + i32(3) + "abc" + i32(1) + i32(1) + f32(std::nanf("")),  // NaN
        i32(2) + i32(3) + "abc" + i32(1) + i32(1) + f32(1),              // missing second entry
    };
    int i = 0;
    for (const std::string& bytes : cases) {
        const std::string path = test::write_temp("bad" + std::to_string(i++) + ".dat", bytes);
        log_.text.clear();
        EXPECT_FALSE(load_imatrix(path.c_str())) << i;
        EXPECT_NE(log_.text.find(path), std::string::npos) << log_.text;
    }
    EXPECT_EQ(imatrix::entry_count(), 0u);  // nothing half-loaded

    log_.text.clear();
    const std::string out = test::temp_path("empty.imatrix.dat");
    save_imatrix(out.c_str());  // nothing collected
    EXPECT_NE(log_.text.find("nothing collected"), std::string::npos) << log_.text;
    EXPECT_FALSE(test::file_exists(out));
}

}  // namespace
}  // namespace sd
