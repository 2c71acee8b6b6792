// conv2d's Winograd path (Conv2dOptions::winograd) against ref::conv2d on every kernel
// family this machine runs: shapes with partial tiles and partial MR panels, runs of tiles
// crossing tile rows inside a chunk, padding 0 / 1 / 2, upsampled input, bias, residual and
// LeakyReLU, several images, strided inputs, f32 / f16 / bf16 weights; wide layers (the
// AutoencoderKL's, up to 512 channels: several blocks of panels, chunks split over the
// panels when tiles are few); and the convolutions it does not take (other kernels, stride
// 2, bf16 products) still right.
//
// Tolerance: that of tests/ops/conv_test.cpp (kAtolPerK * C * 9 absolute plus kRtol
// relative, values in [-1, 1]); Winograd's extra rounding stays well inside it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/compute_type.h"
#include "ops/conv.h"
#include "ops/conv_winograd.h"
#include "ops/convert.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr double kAtolPerK = 2e-6;
constexpr double kRtol = 1e-5;

Tensor make_weight(const Shape& shape, DType dtype, uint32_t seed) {
    return convert(test::random_tensor(shape, seed), dtype);
}

struct Case {
    int64_t b, c, o, h, w;
    int pad;
    bool up, bias, residual, leaky, strided;
    DType dtype;
};

std::string label(Isa isa, const Case& t) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "isa %s B=%lld C=%lld O=%lld H=%lld W=%lld pad %d%s%s%s%s %s",
                  isa_name(isa), (long long)t.b, (long long)t.c, (long long)t.o, (long long)t.h,
                  (long long)t.w, t.pad, t.up ? " up2" : "", t.residual ? " residual" : "",
                  t.leaky ? " leaky" : "", t.strided ? " strided" : "", dtype_name(t.dtype));
    return buf;
}

// conv2d (or conv2d_add) with winograd set against the reference, on every kernel family;
// `taken`: whether the Winograd path must take it (f32 compute type).
void check(const Case& t, uint32_t seed, bool taken = true) {
    Tensor x = test::random_tensor({t.b, t.c, t.h, t.w}, seed);
    if (t.strided) x = test::non_contiguous_copy(x);
    Tensor w = make_weight({t.o, t.c, 3, 3}, t.dtype, seed + 1);
    Tensor bias = t.bias ? test::random_tensor({t.o}, seed + 2) : Tensor();
    Conv2dOptions opt;
    opt.pad_h = opt.pad_w = t.pad;
    opt.upsample2x = t.up;
    opt.winograd = true;
    opt.leaky_relu = t.leaky;
    opt.negative_slope = 0.1f;
    Conv2dOptions linear = opt;
    linear.leaky_relu = false;
    Tensor want = ref::conv2d(x, w, bias, linear);
    Tensor residual;
    if (t.residual) residual = test::random_tensor(want.shape(), seed + 3);
    std::vector<float> v = want.to_vector();
    const std::vector<float> r = t.residual ? residual.to_vector() : std::vector<float>{};
    for (size_t i = 0; i < v.size(); ++i) {
        const float s = t.residual ? v[i] + r[i] : v[i];
        v[i] = t.leaky && s < 0 ? 0.1f * s : s;
    }
    want = Tensor::from_vector(want.shape(), v);
    const double atol = kAtolPerK * static_cast<double>(t.c * 9);
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        EXPECT_EQ(conv_detail::winograd_applies(x, w, opt), taken) << label(isa, t);
        Tensor got = t.residual ? conv2d_add(x, w, bias, opt, residual) : conv2d(x, w, bias, opt);
        test::expect_close(got, want, atol, kRtol, label(isa, t));
    }
}

// check() on each case, seeds from `seed` on.
template <size_t N>
void check_all(const Case (&cases)[N], uint32_t seed) {
    for (const Case& t : cases) {
        check(t, seed);
        seed += 5;
    }
}

TEST(Conv2dWinograd, MatchesRef) {
    // The f32 compute type: under auto (the default) a bf16-stored weight takes bf16
    // products, which the path leaves to the GEMM (Bf16ComputeTypeStepsAside).
    ScopedComputeType f32(ComputeType::F32);
    const DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;
    const Case cases[] = {
        // TAESD's layer (64 -> 64, ReLU), one partial tile row and column.
        {1, 64, 64, 13, 29, 1, false, true, false, true, false, F32},
        // A residual block's last conv: skip and ReLU in the store, two images.
        {2, 64, 64, 8, 20, 1, false, true, true, true, false, F32},
        // TAESD's upsampling conv (no bias), f16 weights.
        {1, 64, 64, 7, 11, 1, true, false, false, false, false, F16},
        // Few channels, a partial MR panel (7), a strided input.
        {2, 5, 7, 9, 67, 1, false, true, false, false, true, F16},
        // Upsampled, residual and LeakyReLU, bf16 weights, 17 outputs.
        {1, 16, 17, 7, 37, 1, true, true, true, true, false, BF16},
        // Smaller than one tile (4 x 3 output, no padding), one output channel.
        {1, 3, 1, 6, 5, 0, false, true, false, false, false, F32},
        // Padding 2: 152 columns (38 tiles), runs crossing tile rows in every chunk.
        {1, 8, 9, 4, 150, 2, false, true, false, true, false, F32},
        // A 3 x 3 image of 64 channels.
        {1, 64, 64, 3, 3, 1, false, true, true, false, true, F32},
        // Several chunks of tiles on every family (144 and 200 tiles), with the residual
        // and upsampled rows the next chunk's prefetch reads.
        {1, 16, 24, 30, 70, 1, false, true, true, true, false, F32},
        {1, 8, 12, 20, 40, 1, true, true, true, false, false, F16},
        // Output 1 x 1 (the smallest).
        {1, 4, 6, 3, 3, 0, false, false, false, false, false, F32},
    };
    check_all(cases, 201);
}

// Past 64 channels (the AutoencoderKL's layers): channel counts that are no multiple of MR
// or of a vector, several blocks of panels, few tiles with many channels (the threads share
// a chunk's V), many chunks (a chunk a thread), images and the extras.
TEST(Conv2dWinograd, WideMatchesRef) {
    ScopedComputeType f32(ComputeType::F32);
    const DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;
    const Case cases[] = {
        // 9 tiles, 17 panels of 6 (3 blocks), 130 input channels.
        {1, 130, 100, 9, 11, 1, false, true, false, false, false, F32},
        // Two images of few tiles each, residual, strided input, f16 weights.
        {2, 96, 70, 12, 12, 1, false, true, true, false, true, F16},
        // An upsampling conv with residual and LeakyReLU, bf16 weights, 90 tiles.
        {1, 72, 66, 10, 36, 1, true, true, true, true, false, BF16},
        // Many input channels, fewer outputs than a block, no bias.
        {1, 260, 20, 8, 8, 1, false, false, false, false, false, F32},
        // Just past the narrow path, 120 tiles (several chunks on every family).
        {1, 65, 130, 40, 48, 1, false, true, false, false, false, F32},
        // 272 tiles: a chunk per thread at a time on every family, 2 blocks of panels.
        {1, 66, 100, 64, 68, 1, false, true, true, false, false, F32},
        // 512 channels each way (the VAE's widest), one tile.
        {1, 512, 512, 4, 4, 1, false, true, true, false, false, F16},
    };
    check_all(cases, 401);
}

// With winograd set, what the path does not take goes to the other paths, right.
TEST(Conv2dWinograd, OtherConvolutionsFallBack) {
    Tensor x = test::random_tensor({1, 8, 11, 13}, 301);
    Tensor bias = test::random_tensor({6}, 302);
    Conv2dOptions opt;
    opt.winograd = true;
    opt.pad_h = opt.pad_w = 1;
    struct Other {
        Shape w;
        int stride;
    };
    for (const Other& k :
         {Other{{6, 8, 3, 3}, 2}, Other{{6, 8, 5, 5}, 1}, Other{{6, 8, 1, 3}, 1}}) {
        Tensor w = make_weight(k.w, DType::F32, 303);
        Conv2dOptions o = opt;
        o.stride_h = o.stride_w = k.stride;
        EXPECT_FALSE(conv_detail::winograd_applies(x, w, o));
        test::expect_close(conv2d(x, w, bias, o), ref::conv2d(x, w, bias, o),
                           kAtolPerK * static_cast<double>(k.w.numel() / 6), kRtol,
                           "fallback " + k.w.to_string());
    }
    // Any width is taken; nothing is without winograd asked for.
    Tensor wide = make_weight({80, 8, 3, 3}, DType::F32, 304);
    EXPECT_TRUE(conv_detail::winograd_applies(x, wide, opt));
    Tensor w = make_weight({6, 8, 3, 3}, DType::F32, 305);
    EXPECT_TRUE(conv_detail::winograd_applies(x, w, opt));
    EXPECT_FALSE(conv_detail::winograd_applies(x, w, Conv2dOptions{}));
}

// Under the bf16 compute type the GEMM's panels hold bf16 pairs: the path steps aside and
// the product runs in bf16 (tolerance of bf16 operands). Where the machine has no bf16 dot
// products the compute type stays f32 and the path runs.
TEST(Conv2dWinograd, Bf16ComputeTypeStepsAside) {
    Tensor x = test::random_tensor({1, 32, 9, 21}, 311);
    Tensor w = make_weight({32, 32, 3, 3}, DType::F32, 312);
    Conv2dOptions opt;
    opt.winograd = true;
    opt.pad_h = opt.pad_w = 1;
    const Tensor want = ref::conv2d(x, w, Tensor(), opt);
    {
        ScopedComputeType bf16(ComputeType::BF16);
        EXPECT_EQ(conv_detail::winograd_applies(x, w, opt), !bf16_compute_supported());
        test::expect_close(conv2d(x, w, Tensor(), opt), want, 0.05, 0.02, "bf16 compute type");
    }
    // Auto: a weight stored in bf16 multiplies in bf16 as well, an f32 one takes the path.
    ScopedComputeType automatic(ComputeType::Auto);
    const Tensor w16 = convert(w, DType::BF16);
    test::expect_close(conv2d(x, w16, Tensor(), opt), ref::conv2d(x, w16, Tensor(), opt), 0.05,
                       0.02, "auto, bf16 weight");
    EXPECT_TRUE(conv_detail::winograd_applies(x, w, opt));
}

}  // namespace
}  // namespace sd
