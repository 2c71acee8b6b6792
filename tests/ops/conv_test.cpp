// conv2d kernel against the reference on every kernel family this machine runs: 1x1 and
// 3x3 and odd kernels, stride 1 and 2, padding 0 and 1, small and odd spatial sizes,
// several images, strided inputs, f32 / f16 / bf16 and block-quant weights.
//
// Tolerance: f32 accumulation in a different order from the reference over
// K = C * KH * KW products of values in [-1, 1]: kAtolPerK * K absolute plus kRtol relative.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "ops/compute_type.h"
#include "ops/conv.h"
#include "ops/shape_ops.h"
#include "tensor/quant.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kAtolPerK = 2e-6;
constexpr double kRtol = 1e-5;

// An [o, c, kh, kw] weight of `dtype` from random values.
Tensor make_weight(int64_t o, int64_t c, int64_t kh, int64_t kw, DType dtype, uint32_t seed) {
    Tensor f = test::random_tensor({o, c, kh, kw}, seed);
    if (dtype == DType::F32) return f;
    Tensor w = Tensor::empty({o, c, kh, kw}, dtype);
    const int64_t rows = o * c * kh;
    const size_t rb = row_bytes(dtype, kw);
    for (int64_t r = 0; r < rows; ++r) {
        quantize_row(dtype, f.data<float>() + r * kw, static_cast<uint8_t*>(w.data_ptr()) + r * rb,
                     kw);
    }
    return w;
}

struct ConvCase {
    int64_t b, c, o, h, w, kh, kw;
    int stride, pad;
};

std::string label(Isa isa, const ConvCase& t, DType dtype) {
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "isa %s B=%lld C=%lld O=%lld H=%lld W=%lld k=%lldx%lld stride %d pad %d %s",
                  isa_name(isa), static_cast<long long>(t.b), static_cast<long long>(t.c),
                  static_cast<long long>(t.o), static_cast<long long>(t.h),
                  static_cast<long long>(t.w), static_cast<long long>(t.kh),
                  static_cast<long long>(t.kw), t.stride, t.pad, dtype_name(dtype));
    return buf;
}

// conv2d against ref::conv2d on every kernel family.
void check_case(const ConvCase& t, DType dtype, bool with_bias, bool strided, uint32_t seed) {
    const ScopedComputeType f32(ComputeType::F32);  // auto would round a bf16 weight's inputs
    Tensor x = test::random_tensor({t.b, t.c, t.h, t.w}, seed);
    if (strided) x = test::non_contiguous_copy(x);
    Tensor w = make_weight(t.o, t.c, t.kh, t.kw, dtype, seed + 1);
    Tensor bias = with_bias ? test::random_tensor({t.o}, seed + 2) : Tensor();
    Conv2dOptions opt;
    opt.stride_h = opt.stride_w = t.stride;
    opt.pad_h = opt.pad_w = t.pad;
    const double atol = kAtolPerK * static_cast<double>(t.c * t.kh * t.kw);
    const Tensor want = ref::conv2d(x, w, bias, opt);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        test::expect_close(conv2d(x, w, bias, opt), want, atol, kRtol,
                           label(isa, t, dtype) + (strided ? " strided" : ""));
    }
}

TEST(Conv2d, RefMatchesHandComputed) {
    // One 3x3 input, one 2x2 kernel, padding 0, stride 1.
    Tensor x = Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    Tensor w = Tensor::from_vector({1, 1, 2, 2}, {1, 0, 0, -1});
    Tensor b = Tensor::from_vector({1}, {0.5f});
    // out[i, j] = x[i, j] - x[i + 1, j + 1] + 0.5 = -4 + 0.5 everywhere.
    Tensor want = Tensor::from_vector({1, 1, 2, 2}, {-3.5f, -3.5f, -3.5f, -3.5f});
    test::expect_close(ref::conv2d(x, w, b), want, 0, 0);
    test::expect_close(conv2d(x, w, b), want, 1e-6, 0);
    // Padding 1, stride 2 on the same input: corners of the padded 5x5 grid.
    Conv2dOptions opt;
    opt.pad_h = opt.pad_w = 1;
    opt.stride_h = opt.stride_w = 2;
    // out[0,0] = 0 - x[0,0] = -1; out[0,1] = 0 - x[0,2] = -3; out[1,0] = x[1,0]... see below.
    // Window at (2i-1, 2j-1): w[0,0] * x[2i-1, 2j-1] - x[2i, 2j].
    Tensor want2 =
        Tensor::from_vector({1, 1, 2, 2}, {-1 + 0.5f, -3 + 0.5f, -7 + 0.5f, 5 - 9 + 0.5f});
    test::expect_close(ref::conv2d(x, w, b, opt), want2, 0, 0);
    test::expect_close(conv2d(x, w, b, opt), want2, 1e-6, 0);
}

TEST(Conv2d, MatchesRef) {
    const ConvCase cases[] = {
        {1, 3, 5, 7, 9, 3, 3, 1, 1},     {2, 4, 7, 8, 8, 3, 3, 2, 1},
        {1, 17, 33, 5, 6, 1, 1, 1, 0},   {2, 8, 16, 9, 7, 1, 1, 2, 0},
        {1, 5, 3, 1, 1, 1, 1, 1, 0},     {1, 6, 70, 13, 11, 3, 3, 1, 0},
        {3, 3, 4, 2, 2, 3, 3, 1, 1},     {1, 9, 10, 11, 13, 3, 3, 2, 0},
        {1, 16, 130, 3, 67, 3, 3, 1, 1}, {1, 2, 3, 4, 5, 4, 2, 1, 1},
        {2, 33, 20, 12, 12, 3, 3, 1, 1}, {1, 4, 8, 1, 9, 1, 3, 1, 1},
        {1, 40, 7, 10, 10, 1, 1, 1, 1},  {1, 3, 65, 17, 5, 3, 3, 2, 1},
        {1, 3, 5, 11, 14, 3, 3, 3, 1},   {2, 5, 6, 9, 37, 3, 3, 2, 1},
        {1, 2, 4, 8, 70, 1, 1, 2, 0},    {1, 4, 9, 5, 100, 5, 5, 4, 2},
    };
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
    uint32_t seed = 1;
    for (const ConvCase& t : cases) {
        check_case(t, dtypes[seed % 3], seed % 2 == 0, false, seed);
        seed += 3;
    }
}

TEST(Conv2d, StridedInputAndAllDtypes) {
    const ConvCase t{2, 12, 20, 9, 10, 3, 3, 1, 1};
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        check_case(t, dtype, true, true, 11);
        check_case(t, dtype, false, false, 12);
    }
}

TEST(Conv2d, LargerThanOneBlock) {
    // Several k blocks (K = C * 9 > 1024), pixel blocks across rows, pixels > output
    // channels and output channels > pixels.
    const ConvCase cases[] = {{1, 130, 20, 9, 9, 3, 3, 1, 1},
                              {1, 64, 96, 20, 20, 3, 3, 1, 1},
                              {1, 120, 300, 7, 6, 3, 3, 1, 1}};
    for (const ConvCase& t : cases) check_case(t, DType::F16, true, false, 21);
}

TEST(Conv2d, BlockQuantWeightsWithWholeRows) {
    // Rows of a block-quant weight are its KW values: a 1 x 32 kernel holds one q8_0 block.
    const ConvCase t{1, 3, 9, 4, 40, 1, 32, 1, 0};
    for (DType dtype : {DType::Q8_0, DType::Q4_0, DType::IQ4_NL}) {
        check_case(t, dtype, true, false, 31);
    }
}

// upsample2x: the same as conv2d(upsample_nearest2x(x)) (the reference's definition), on
// odd widths so a row's stretches start on odd upsampled columns, with padding 0 and 1,
// a 1x1 kernel (no longer the plain-matrix path) and strided inputs.
TEST(Conv2d, UpsampledInput) {
    const ConvCase cases[] = {{1, 3, 5, 7, 9, 3, 3, 1, 1},
                              {2, 4, 7, 5, 13, 3, 3, 1, 0},
                              {1, 17, 20, 3, 35, 1, 1, 1, 0},
                              {1, 70, 33, 6, 5, 3, 3, 1, 1}};
    uint32_t seed = 41;
    for (const ConvCase& t : cases) {
        Tensor x = test::random_tensor({t.b, t.c, t.h, t.w}, seed);
        Tensor w = make_weight(t.o, t.c, t.kh, t.kw, DType::F16, seed + 1);
        Tensor bias = test::random_tensor({t.o}, seed + 2);
        Conv2dOptions plain;
        plain.pad_h = plain.pad_w = t.pad;
        Conv2dOptions up = plain;
        up.upsample2x = true;
        const Tensor want = ref::conv2d(ref::upsample_nearest2x(x), w, bias, plain);
        test::expect_close(ref::conv2d(x, w, bias, up), want, 0, 0, "ref upsample2x");
        const double atol = kAtolPerK * static_cast<double>(t.c * t.kh * t.kw);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            for (bool strided : {false, true}) {
                const Tensor xi = strided ? test::non_contiguous_copy(x) : x;
                test::expect_close(
                    conv2d(xi, w, bias, up), want, atol, kRtol,
                    label(isa, t, DType::F16) + " upsample2x" + (strided ? " strided" : ""));
            }
        }
        seed += 3;
    }
    Conv2dOptions strided_up;
    strided_up.upsample2x = true;
    strided_up.stride_h = strided_up.stride_w = 2;
    Tensor x = test::random_tensor({1, 3, 5, 5}, 1);
    Tensor w = test::random_tensor({4, 3, 3, 3}, 2);
    EXPECT_THROW(conv2d(x, w, Tensor(), strided_up), Error);
    EXPECT_THROW(ref::conv2d(x, w, Tensor(), strided_up), Error);
}

// The direct path (ops/conv_direct.cpp: stride 1, at most 64 output channels, rows at least
// half a register tile wide): rows that end in a partial tile (W not a multiple of 16 / 64),
// several bands of rows (more rows than a band of 192 channels holds), padding 0..2, 3x3,
// 5x5 and 1x3 kernels, output channels that leave a partial panel of 6, several images.
TEST(Conv2d, DirectPathShapes) {
    const ConvCase cases[] = {{1, 64, 32, 40, 128, 3, 3, 1, 1}, {2, 5, 7, 9, 67, 3, 3, 1, 1},
                              {1, 192, 64, 12, 33, 3, 3, 1, 1}, {1, 3, 1, 6, 150, 5, 5, 1, 2},
                              {1, 8, 64, 5, 40, 1, 3, 1, 0},    {1, 6, 13, 70, 36, 3, 3, 1, 0}};
    uint32_t seed = 61;
    for (const ConvCase& t : cases) {
        check_case(t, seed % 2 ? DType::F16 : DType::F32, true, seed % 3 == 0, seed);
        seed += 3;
    }
}

// The direct path with upsample2x and the LeakyReLU epilogue, writing into a channel range
// of a larger buffer (ESRGAN's dense blocks and upsampling convolutions).
TEST(Conv2d, DirectPathUpsampledLeakyInto) {
    const ScopedComputeType f32(ComputeType::F32);  // a bf16 weight on the f32 direct path
    Tensor x = test::random_tensor({1, 20, 9, 23}, 71);
    Tensor w = make_weight(32, 20, 3, 3, DType::BF16, 72);
    Tensor bias = test::random_tensor({32}, 73);
    Conv2dOptions opt;
    opt.pad_h = opt.pad_w = 1;
    opt.upsample2x = true;
    opt.leaky_relu = true;
    opt.negative_slope = 0.2f;
    const Tensor want = ref::conv2d(x, w, bias, opt);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        Tensor buffer = Tensor::zeros({1, 40, 18, 46});
        Tensor part = buffer.narrow(1, 4, 32);
        conv2d_into(x, w, bias, opt, part);
        test::expect_close(part, want, kAtolPerK * 180, kRtol,
                           std::string("direct upsample2x leaky into ") + isa_name(isa));
        const Tensor untouched = Tensor::zeros({1, 4, 18, 46});
        test::expect_close(buffer.narrow(1, 0, 4), untouched, 0, 0, "channels before");
        test::expect_close(buffer.narrow(1, 36, 4), untouched, 0, 0, "channels after");
    }
}

// conv2d_add: the residual added before the LeakyReLU, in the direct path's store (<= 64
// output channels, upsampled input, two images) and after the im2col path (96 channels, and
// the generic family, which has no direct path).
TEST(Conv2d, ResidualAddedBeforeTheLeakyRelu) {
    struct Case {
        int64_t c, o;
        bool up;
    };
    uint32_t seed = 81;
    for (const Case& t : {Case{16, 64, true}, Case{24, 96, false}}) {
        Tensor x = test::random_tensor({2, t.c, 7, 37}, seed);
        Tensor w = make_weight(t.o, t.c, 3, 3, DType::F16, seed + 1);
        Tensor bias = test::random_tensor({t.o}, seed + 2);
        Conv2dOptions opt;
        opt.pad_h = opt.pad_w = 1;
        opt.upsample2x = t.up;
        opt.leaky_relu = true;
        opt.negative_slope = 0.1f;
        Conv2dOptions linear = opt;
        linear.leaky_relu = false;
        const Tensor y = ref::conv2d(x, w, bias, linear);
        const Tensor residual = test::random_tensor(y.shape(), seed + 3);
        const std::vector<float> yv = y.to_vector(), rv = residual.to_vector();
        std::vector<float> want(yv.size());
        for (size_t i = 0; i < yv.size(); ++i) {
            const float sum = yv[i] + rv[i];
            want[i] = sum < 0 ? 0.1f * sum : sum;
        }
        const Tensor expected = Tensor::from_vector(y.shape(), want);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            test::expect_close(conv2d_add(x, w, bias, opt, residual), expected,
                               kAtolPerK * static_cast<double>(t.c * 9), kRtol,
                               "conv2d_add " + std::to_string(t.o) + " " + isa_name(isa));
        }
        seed += 4;
    }
    Tensor x = test::random_tensor({1, 4, 5, 5}, 1);
    Tensor w = make_weight(8, 4, 3, 3, DType::F32, 2);
    // A residual of another shape than the result (8 x 3 x 3).
    EXPECT_THROW(conv2d_add(x, w, Tensor(), {}, Tensor::zeros({1, 8, 5, 5})), Error);
}

// The LeakyReLU epilogue: the ref applies it by hand-checked rule, the kernels match the ref.
TEST(Conv2d, LeakyReluEpilogue) {
    Tensor x = Tensor::from_vector({1, 1, 1, 2}, {1.0f, -2.0f});
    Tensor w = Tensor::from_vector({2, 1, 1, 1}, {1.0f, -1.0f});
    Conv2dOptions leaky;
    leaky.leaky_relu = true;
    leaky.negative_slope = 0.2f;
    // Channel 0 is x, channel 1 is -x; negatives are scaled by 0.2.
    Tensor want = Tensor::from_vector({1, 2, 1, 2}, {1.0f, -0.4f, -0.2f, 2.0f});
    test::expect_close(ref::conv2d(x, w, Tensor(), leaky), want, 0, 0);
    test::expect_close(conv2d(x, w, Tensor(), leaky), want, 1e-7, 0);
    Tensor xs = test::random_tensor({2, 12, 9, 11}, 51);
    Tensor ws = make_weight(20, 12, 3, 3, DType::F16, 52);
    Tensor bs = test::random_tensor({20}, 53);
    leaky.pad_h = leaky.pad_w = 1;
    const Tensor ref_out = ref::conv2d(xs, ws, bs, leaky);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        test::expect_close(conv2d(xs, ws, bs, leaky), ref_out, kAtolPerK * 108, kRtol,
                           std::string("leaky relu ") + isa_name(isa));
    }
}

// conv2d_into writes into a channel range of a larger buffer, reading another range of the
// same buffer (a dense block's concatenation), and leaves the rest of the buffer alone.
TEST(Conv2d, IntoChannelRangeOfABuffer) {
    Tensor buf = test::random_tensor({1, 12, 7, 9}, 61);
    const std::vector<float> before = buf.to_vector();
    Tensor w = make_weight(4, 6, 3, 3, DType::F16, 62);
    Tensor b = test::random_tensor({4}, 63);
    Conv2dOptions opt;
    opt.pad_h = opt.pad_w = 1;
    const Tensor input = buf.narrow(1, 0, 6);
    const Tensor want = ref::conv2d(input.clone(), w, b, opt);
    conv2d_into(input, w, b, opt, buf.narrow(1, 6, 4));
    test::expect_close(buf.narrow(1, 6, 4), want, kAtolPerK * 54, kRtol, "conv2d_into");
    const std::vector<float> after = buf.to_vector();
    const size_t plane = 7 * 9;
    for (size_t i = 0; i < after.size(); ++i) {
        if (i >= 6 * plane && i < 10 * plane) continue;
        ASSERT_EQ(after[i], before[i]) << "element " << i << " outside the output changed";
    }
    // Overlapping output, wrong shape, non-contiguous output: errors.
    EXPECT_THROW(conv2d_into(input, w, b, opt, buf.narrow(1, 2, 4)), Error);
    EXPECT_THROW(conv2d_into(input, w, b, opt, buf.narrow(1, 6, 3)), Error);
    Tensor wide = Tensor::zeros({1, 4, 7, 18});
    EXPECT_THROW(conv2d_into(input, w, b, opt, wide.narrow(3, 0, 9)), Error);
}

TEST(Conv2d, BadArgumentsThrow) {
    Tensor x = test::random_tensor({1, 3, 5, 5}, 1);
    Tensor w = test::random_tensor({4, 3, 3, 3}, 2);
    EXPECT_THROW(conv2d(x, test::random_tensor({4, 2, 3, 3}, 3)), Error);
    EXPECT_THROW(conv2d(x, test::random_tensor({4, 3, 7, 7}, 3)), Error);
    EXPECT_THROW(conv2d(x, w, test::random_tensor({3}, 3)), Error);
    EXPECT_THROW(conv2d(test::random_tensor({3, 5, 5}, 1), w), Error);
    EXPECT_THROW(conv2d(x, test::random_tensor({4, 27}, 3)), Error);
    Conv2dOptions bad;
    bad.stride_h = 0;
    EXPECT_THROW(conv2d(x, w, Tensor(), bad), Error);
    Conv2dOptions neg;
    neg.pad_w = -1;
    EXPECT_THROW(conv2d(x, w, Tensor(), neg), Error);
    EXPECT_THROW(ref::conv2d(x, test::random_tensor({4, 2, 3, 3}, 3)), Error);
    try {
        conv2d(x, test::random_tensor({4, 2, 3, 3}, 3));
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[1, 3, 5, 5]"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace sd
