// Tensors on a Vulkan device (gpu/device_tensor.h) and the ops of src/ops run on them
// (gpu/device_ops.h): each op's result on the device against the same call on the host, the
// transfers and submissions counted, the weight budget, the host fallback, and errors.
#include "gpu/device_tensor.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/devices.h"
#include "gpu/vulkan/vulkan_fault.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "test_util.h"
#include "vulkan_test_util.h"

namespace sd {
namespace {

TEST(DeviceTensor, RoundTripCountsTheBytes) {
    auto stream = test::first_vulkan_stream();
    const Tensor host = test::random_tensor({3, 5, 7}, 1);
    const Tensor dev = gpu::to_device(host, *stream);
    EXPECT_EQ(dev.device(), Device::Vulkan);
    EXPECT_EQ(dev.shape(), host.shape());
    EXPECT_EQ(gpu::stream_stats(*stream).submissions, 0);  // nothing runs before the host reads
    const Tensor back = gpu::to_host(dev);
    EXPECT_EQ(back.to_vector(), host.to_vector());
    const gpu::StreamStats s = gpu::stream_stats(*stream);
    EXPECT_EQ(s.submissions, 1);
    EXPECT_EQ(s.bytes_uploaded, 3 * 5 * 7 * 4);
    EXPECT_EQ(s.bytes_downloaded, 3 * 5 * 7 * 4);
    // A narrowed and a permuted view come back with their own values.
    EXPECT_EQ(gpu::to_host(dev.narrow(1, 2, 2)).to_vector(), host.narrow(1, 2, 2).to_vector());
    EXPECT_EQ(gpu::to_host(dev.permute({2, 0, 1})).to_vector(),
              host.permute({2, 0, 1}).to_vector());
}

TEST(DeviceTensor, TheHostReadingADeviceTensorIsNamed) {
    auto stream = test::first_vulkan_stream();
    const Tensor dev = gpu::to_device(Tensor::zeros({4}), *stream);
    try {
        (void)dev.to_vector();
        FAIL() << "read without a transfer";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(gpu::stream_device_name(*stream)), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("to_host"), std::string::npos) << e.what();
    }
    // Two runs' tensors do not mix: the op names both.
    auto other = test::first_vulkan_stream();
    const Tensor b = gpu::to_device(Tensor::zeros({4}), *other);
    EXPECT_THROW(add(dev, b), Error);
}

TEST(DeviceTensor, OutOfDeviceMemoryIsAnErrorAndTheStreamGoesOn) {
    auto stream = test::first_vulkan_stream();
    const Tensor x = gpu::to_device(Tensor::from_vector({4}, {1, 2, 3, 4}), *stream);
    const Tensor one = gpu::to_device(Tensor::full({1}, 0.5f), *stream);
    try {
        (void)silu(one.expand({int64_t{1} << 20, int64_t{1} << 16}));  // 256 GiB out
        FAIL() << "a 256 GiB result was allocated";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(gpu::stream_device_name(*stream)), std::string::npos)
            << e.what();
    }
    gpu::settle(*stream);
    EXPECT_EQ(gpu::to_host(x * 2.0f).to_vector(), (std::vector<float>{2, 4, 6, 8}));
}

TEST(DeviceTensor, ALostDeviceIsAnErrorNamingItAndTheStreamOpensItAnew) {
    auto stream = test::first_vulkan_stream();
    const Tensor w = test::random_tensor({8, 16}, 21);
    const Tensor x = test::random_tensor({4, 16}, 22);
    const Tensor want = linear(x, w);
    test::expect_close(gpu::to_host(linear(gpu::to_device(x, *stream), w)), want, 1e-5, 1e-5,
                       "before");
    // The next submission fails as a lost device's does (SD_VULKAN_FAULT=device_lost@1).
    gpu::set_submit_fault(VK_ERROR_DEVICE_LOST, 1);
    try {
        (void)gpu::to_host(linear(gpu::to_device(x, *stream), w));
        FAIL() << "a lost device's submission went through";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(gpu::stream_device_name(*stream)), std::string::npos) << what;
        EXPECT_NE(what.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << what;
    }
    gpu::settle(*stream);  // as the pipeline does after a failed call: the device opens anew
    const gpu::StreamStats before = gpu::stream_stats(*stream);
    test::expect_close(gpu::to_host(linear(gpu::to_device(x, *stream), w)), want, 1e-5, 1e-5,
                       "after");
    const gpu::StreamStats after = gpu::stream_stats(*stream);
    EXPECT_EQ(after.submissions, before.submissions + 1);
    EXPECT_GE(after.weight_bytes_uploaded - before.weight_bytes_uploaded, int64_t(w.nbytes()))
        << "the weight is uploaded again to the new device";
}

// One op on host inputs and on the same inputs moved to the device.
struct OpCase {
    std::string name;
    std::vector<Tensor> inputs;  // activations: moved to the device; weights stay in the closure
    std::function<Tensor(const std::vector<Tensor>&)> op;
    double atol = 2e-5, rtol = 2e-4;
};

void expect_same_on_device(const OpCase& c, gpu::Stream& stream) {
    SCOPED_TRACE(c.name);
    const Tensor want = c.op(c.inputs);
    std::vector<Tensor> dev;
    for (const Tensor& t : c.inputs) dev.push_back(gpu::to_device(t, stream));
    const Tensor got = c.op(dev);
    ASSERT_EQ(got.device(), Device::Vulkan);
    test::expect_close(gpu::to_host(got), want, c.atol, c.rtol, c.name);
}

TEST(DeviceOps, EachOpMatchesTheHost) {
    auto stream = test::first_vulkan_stream();
    const Tensor w_f16 = convert(test::random_tensor({48, 40}, 2, -0.2f, 0.2f), DType::F16);
    const Tensor w_q8 = test::random_weight(24, 64, DType::Q8_0, 3);
    const Tensor bias = test::random_tensor({48}, 4);
    const Tensor conv_w = test::random_tensor({6, 5, 3, 3}, 5, -0.3f, 0.3f);
    const Tensor conv_b = test::random_tensor({6}, 6);
    const Tensor gn_w = test::random_tensor({32}, 7, 0.5f, 1.5f);
    const Tensor gn_b = test::random_tensor({32}, 8);
    const Tensor ln_w = test::random_tensor({40}, 9, 0.5f, 1.5f);
    const Tensor emb = test::random_tensor({1, 32, 1, 1}, 10);  // a host constant
    const Tensor x40 = test::random_tensor({2, 7, 40}, 11);
    const Tensor img = test::random_tensor({2, 5, 9, 11}, 12);
    const Tensor act = test::random_tensor({2, 32, 6, 5}, 13);
    const std::vector<OpCase> cases = {
        {"linear f16 + bias", {x40}, [&](auto& in) { return linear(in[0], w_f16, bias); }},
        {"linear q8_0 of a narrowed view",
         {test::random_tensor({3, 80}, 14)},
         [&](auto& in) { return linear(in[0].narrow(1, 8, 64), w_q8); }},
        {"conv2d 3x3 stride 2",
         {img},
         [&](auto& in) {
             Conv2dOptions o;
             o.stride_h = o.stride_w = 2;
             o.pad_h = o.pad_w = 1;
             return conv2d(in[0], conv_w, conv_b, o);
         }},
        {"conv2d upsample2x",
         {img},
         [&](auto& in) {
             Conv2dOptions o;
             o.pad_h = o.pad_w = 1;
             o.upsample2x = true;
             return conv2d(in[0], conv_w, conv_b, o);
         }},
        {"conv2d_add with LeakyReLU",
         {img, test::random_tensor({2, 6, 9, 11}, 15)},
         [&](auto& in) {
             Conv2dOptions o;
             o.pad_h = o.pad_w = 1;
             o.leaky_relu = true;
             o.negative_slope = 0.2f;
             return conv2d_add(in[0], conv_w, conv_b, o, in[1]);
         }},
        {"group_norm + silu",
         {act},
         [&](auto& in) { return group_norm(in[0], 8, gn_w, gn_b, 1e-5f, true); }},
        {"layer_norm", {x40}, [&](auto& in) { return layer_norm(in[0], ln_w, {}, 1e-5f); }},
        {"rms_norm of a strided view",
         {x40},
         [&](auto& in) { return rms_norm(in[0].transpose(0, 1), ln_w, 1e-6f); }},
        {"softmax", {x40}, [&](auto& in) { return softmax(in[0], -1); }},
        {"add with broadcasting",
         {act, test::random_tensor({32, 1, 5}, 16)},
         [&](auto& in) { return in[0] + in[1]; }},
        {"mul by a host constant", {act}, [&](auto& in) { return in[0] * emb; }},
        {"sub, div of views",
         {x40, test::random_tensor({2, 40, 7}, 17, 0.5f, 2.0f)},
         [&](auto& in) { return (in[0] - in[1].transpose(1, 2)) / in[1].transpose(1, 2); }},
        {"scale, add_scalar, clamp",
         {act},
         [&](auto& in) { return clamp(in[0] * 3.0f + 0.5f, -1.0f, 2.0f); }},
        {"silu, gelu, gelu tanh, quick_gelu, sigmoid, tanh",
         {x40},
         [&](auto& in) {
             return silu(in[0]) + gelu(in[0]) + gelu(in[0], GeluApprox::Tanh) + quick_gelu(in[0]) +
                    sigmoid(in[0]) + tanh(in[0]);
         }},
        {"geglu", {x40}, [&](auto& in) { return geglu(in[0]); }},
        {"concat on dim 1",
         {act, test::random_tensor({2, 3, 6, 5}, 18)},
         [&](auto& in) {
             return concat({in[0], in[1]}, 1);
         }},
        {"permute_copy",
         {img},
         [&](auto& in) {
             return permute_copy(in[0], {0, 2, 3, 1});
         }},
        {"a 5-d permutation (patchify)",
         {test::random_tensor({3, 4, 2, 6, 2}, 27)},
         [&](auto& in) {
             return permute_copy(in[0], {1, 3, 0, 2, 4});
         }},
        {"pad2d and crop",
         {img},
         [&](auto& in) { return pad2d(pad2d(in[0], 1, 2, 0, 3, 0.5f), -1, 0, -2, -1); }},
        {"upsample_nearest2x", {img}, [&](auto& in) { return upsample_nearest2x(in[0]); }},
        {"attention of split heads, causal",
         {test::random_tensor({2, 9, 48}, 19), test::random_tensor({2, 9, 48}, 20),
          test::random_tensor({2, 9, 48}, 21)},
         [&](auto& in) { return multi_head_attention(in[0], in[1], in[2], 3, {}, true); }},
        {"attention with a host mask",
         {test::random_tensor({1, 2, 5, 16}, 22), test::random_tensor({1, 2, 7, 16}, 23),
          test::random_tensor({1, 2, 7, 16}, 24)},
         [&](auto& in) {
             const Tensor mask = test::random_tensor({1, 1, 5, 7}, 25);
             return scaled_dot_product_attention(in[0], in[1], in[2], mask);
         }},
        {"copy_into a channel range",
         {test::random_tensor({1, 32, 6, 5}, 26)},
         [&](auto& in) {
             const Tensor out = gpu::on_device(in[0]) ? gpu::to_device(Tensor::zeros({1, 40, 6, 5}),
                                                                       *gpu::stream_of(in[0]))
                                                      : Tensor::zeros({1, 40, 6, 5});
             copy_into(in[0], out.narrow(1, 4, 32));
             return out;
         }},
    };
    for (const OpCase& c : cases) expect_same_on_device(c, *stream);
    // Nothing ran on the host; every result came back in its own submission.
    const gpu::StreamStats s = gpu::stream_stats(*stream);
    EXPECT_EQ(s.cpu_fallbacks, 0);
    EXPECT_EQ(s.submissions, static_cast<int64_t>(cases.size()));
}

TEST(DeviceOps, AnOpWithoutAKernelRunsOnTheHost) {
    auto stream = test::first_vulkan_stream();
    const OpCase c{"matmul",
                   {test::random_tensor({2, 3, 4}, 30), test::random_tensor({4, 5}, 31)},
                   [](auto& in) { return matmul(in[0], in[1]); }};
    expect_same_on_device(c, *stream);
    EXPECT_EQ(gpu::stream_stats(*stream).cpu_fallbacks, 1);
}
TEST(DeviceOps, WeightsAreUploadedOnceWithinTheBudget) {
    const Tensor w1 = test::random_tensor({64, 64}, 40), w2 = test::random_tensor({64, 64}, 41);
    const int64_t bytes = 64 * 64 * 4;
    const Tensor x = test::random_tensor({2, 64}, 42);
    auto run = [&](gpu::Stream& s) {
        Tensor h = gpu::to_device(x, s);
        for (int i = 0; i < 3; ++i) h = linear(linear(h, w1), w2);
        return gpu::to_host(h);
    };
    auto resident = test::first_vulkan_stream();
    const Tensor a = run(*resident);
    EXPECT_EQ(gpu::stream_stats(*resident).weight_bytes_uploaded, 2 * bytes);
    EXPECT_EQ(gpu::stream_stats(*resident).submissions, 1);
    // A budget of one weight: each use uploads its weight again, and the result is the same.
    gpu::StreamOptions tight;
    tight.weight_budget = static_cast<uint64_t>(bytes);
    auto streamed = test::first_vulkan_stream(tight);
    const Tensor b = run(*streamed);
    EXPECT_EQ(gpu::stream_stats(*streamed).weight_bytes_uploaded, 6 * bytes);
    EXPECT_LE(gpu::stream_stats(*streamed).weight_bytes_resident, bytes);
    EXPECT_EQ(a.to_vector(), b.to_vector());
}

}  // namespace
}  // namespace sd
