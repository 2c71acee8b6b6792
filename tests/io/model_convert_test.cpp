#include "io/model_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "base/cancel.h"
#include "cancel_after.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/tensor_writer.h"
#include "io_test_util.h"
#include "ops/convert.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(TensorTypeRules, ParseAndApply) {
    TensorTypeRules rules = parse_tensor_type_rules("^vae\\.=f16, model\\.=q8_0");
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[0].second, DType::F16);
    EXPECT_EQ(rules[1].second, DType::Q8_0);
    EXPECT_EQ(
        output_dtype("vae.decoder.conv_in.weight", {512, 4, 3, 3}, DType::F32, DType::Q4_0, rules),
        DType::F16);
    EXPECT_EQ(
        output_dtype("model.diffusion_model.x.weight", {64, 64}, DType::F32, DType::Q4_0, rules),
        DType::Q8_0);
    EXPECT_EQ(output_dtype("other.weight", {64, 64}, DType::F32, DType::Q4_0, rules), DType::Q4_0);
    // What stays at full precision whatever the type.
    EXPECT_EQ(output_dtype("a.bias", {64}, DType::F16, DType::Q8_0, {}), DType::F32);
    EXPECT_EQ(output_dtype("a.norm.weight", {64}, DType::F16, DType::Q8_0, {}), DType::F32);
    EXPECT_EQ(output_dtype("a.conv.weight", {64, 64, 3, 3}, DType::F16, DType::Q8_0, {}),
              DType::F16);
    EXPECT_EQ(output_dtype("x.token_embedding.weight", {49408, 768}, DType::F16, DType::Q8_0, {}),
              DType::F16);
    EXPECT_EQ(output_dtype("model.diffusion_model.time_embed.0.weight", {1280, 320}, DType::F16,
                           DType::Q4_K, {}),
              DType::F16);
    EXPECT_EQ(output_dtype("a.weight", {64, 64}, DType::F16, std::nullopt, {}), DType::F16);
    EXPECT_EQ(output_dtype("a.weight", {64, 64}, DType::Q8_0, DType::F16, {}), DType::F16);
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("abc"), "PATTERN=TYPE");
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("a=q9_9"), "unknown type");
    EXPECT_ERROR_CONTAINS(parse_tensor_type_rules("(=f16"), "regular expression");
}

// Converts the sd15 fixture to `type` and checks every tensor read back: equal to the
// source, or to the engine's own conversion of it to the tensor's output type.
void check_round_trip(DType type) {
    std::string src = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles source;
    source.add(src, ModelRole::Checkpoint);
    ConvertOptions options;
    options.output_path = test::temp_path(std::string("sd15_") + dtype_name(type) + ".gguf");
    options.type = type;
    convert_model(source, options);
    ModelFiles result;
    result.add(options.output_path, ModelRole::Checkpoint);
    ASSERT_EQ(result.size(), source.size());
    EXPECT_EQ(detect_family(result).variant, "SD 1.x");
    size_t quantized = 0;
    for (const std::string& name : source.names()) {
        const TensorRecord& s = source.get(name);
        const TensorRecord* r = result.find(name);
        ASSERT_NE(r, nullptr) << name;
        ASSERT_EQ(r->shape, s.shape) << name;
        DType want = output_dtype(name, s.shape, s.dtype, type, {});
        ASSERT_EQ(r->dtype, want) << name;
        Tensor expected = s.load();
        if (want != s.dtype) expected = convert(convert(expected, DType::F32), want);
        Tensor got = r->load();
        ASSERT_EQ(std::memcmp(got.data_ptr(), expected.contiguous().data_ptr(), got.nbytes()), 0)
            << name;
        quantized += want == type;
    }
    EXPECT_GT(quantized, 150u) << "the linear weight matrices with whole blocks are converted";
    std::remove(options.output_path.c_str());
}

TEST(ModelConvert, Sd15ToGgufQ8_0) {
    check_round_trip(DType::Q8_0);
}
TEST(ModelConvert, Sd15ToGgufQ4_0) {
    check_round_trip(DType::Q4_0);
}
TEST(ModelConvert, Sd15ToGgufQ4_K) {
    check_round_trip(DType::Q4_K);
}

// A cancel before or during a conversion ends it with sd::Cancelled and leaves no file.
TEST(ModelConvert, CancelLeavesNoFile) {
    std::string src = test::generated_checkpoint("sd15", "f16", 1);
    ModelFiles source;
    source.add(src, ModelRole::Checkpoint);
    CancelToken token;
    ConvertOptions options;
    options.output_path = test::temp_path("sd15_cancelled.gguf");
    options.type = DType::Q8_0;
    options.cancel = &token;
    auto no_file = [&] {
        return !std::ifstream(options.output_path).good() &&
               !std::ifstream(options.output_path + ".part").good();
    };
    token.cancel();
    EXPECT_THROW(convert_model(source, options), Cancelled);
    EXPECT_TRUE(no_file());
    // 1 GiB of f16 weights to q8_0 takes well over 100 ms; the cancel comes 100 ms in.
    token.reset();
    test::CancelAfter canceller(token, 100);
    EXPECT_THROW(convert_model(source, options), Cancelled);
    const double ended = canceller.ended();
    EXPECT_LT(ended, 2.0) << "seconds from the cancel to the end";
    std::printf("convert: ended %.3f s after the cancel\n", ended);
    EXPECT_TRUE(no_file());
}

TEST(ModelConvert, SafetensorsOutputHoldsPlainTypesOnly) {
    Tensor w = test::random_tensor({64, 64}, 1);
    std::string in = test::temp_path("small_in.safetensors");
    write_safetensors(in, {{"a.weight", DType::F32, w.shape(), [w] { return w; }}});
    ModelFiles files;
    files.add(in, ModelRole::Checkpoint);
    ConvertOptions options;
    options.output_path = test::temp_path("small_out.safetensors");
    options.type = DType::Q8_0;
    EXPECT_ERROR_CONTAINS(convert_model(files, options), "cannot hold q8_0");
    options.type = DType::BF16;
    convert_model(files, options);
    ModelFiles back;
    back.add(options.output_path, ModelRole::Checkpoint);
    EXPECT_EQ(back.get("a.weight").dtype, DType::BF16);
    std::remove(in.c_str());
    std::remove(options.output_path.c_str());
}

}  // namespace
}  // namespace sd
