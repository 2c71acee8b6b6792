// The peak-memory estimate: normal sizes pass on a 24 GiB machine, an absurd one is refused
// with both figures, tiling and streaming lower it, a part on a device counts nothing of its
// own, and the machine's figure is read.
#include "pipeline/memory_estimate.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "ops/kernel_scratch.h"
#include "pipeline/request.h"

namespace sd {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The f16 fixtures' weights: SD 1.5's UNet 1.72 GB, SDXL's 5.14 GB, the KL VAE 0.17 GB.
MemoryInputs inputs(double unet, int64_t side) {
    MemoryInputs in;
    in.diffusion_weights = unet;
    in.codec_weights = 0.167e9;
    in.width = in.height = side;
    return in;
}

TEST(MemoryEstimate, NormalSizesPassOnA24GiBMachine) {
    const MemoryInputs sd15 = inputs(1.72e9, 512), sdxl = inputs(5.14e9, 1024);
    const MemoryEstimate a = estimate_generation_memory(sd15), b = estimate_generation_memory(sdxl);
    // Measured peak RSS: 2075 MiB and 6821 MiB; the estimate stays near, above them.
    EXPECT_GT(a.total(), 2.0 * kGiB);
    EXPECT_LT(a.total(), 4.0 * kGiB);
    EXPECT_GT(b.total(), 6.5 * kGiB);
    EXPECT_LT(b.total(), 10.0 * kGiB);
    EXPECT_NO_THROW(check_generation_memory(a, 24 * kGiB, sd15, "512x512"));
    EXPECT_NO_THROW(check_generation_memory(b, 24 * kGiB, sdxl, "1024x1024"));
}

// Reference images' tokens join every diffusion call: their pixels count with the image's.
TEST(MemoryEstimate, ReferenceImagesAddToTheSamplingPhase) {
    MemoryInputs in = inputs(1.72e9, 1024);
    in.codec_weights = 0;  // sampling is the peak
    const double plain = estimate_generation_memory(in).total();
    in.ref_pixels = 1024.0 * 1024.0;
    const double with_ref = estimate_generation_memory(in).total();
    EXPECT_NEAR(with_ref - plain, in.footprint.diffusion_per_pixel * in.ref_pixels,
                0.01 * (with_ref - plain));
}

// Weights of `bytes`, on a device or not (a placement's wrapper says on_device).
class SizedModel : public DiffusionModel {
  public:
    SizedModel(size_t bytes, bool on_device) : bytes_(bytes), on_device_(on_device) {}
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning&,
                   const ControlSignal*) const override {
        return x;
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 1; }
    void release_weights() const override {}
    size_t weight_bytes() const override { return bytes_; }
    bool on_device() const override { return on_device_; }

  private:
    size_t bytes_;
    bool on_device_;
};

class SizedCodec : public LatentCodec {
  public:
    SizedCodec(size_t bytes, bool on_device) : bytes_(bytes), on_device_(on_device) {}
    Tensor encode(const Tensor& x, Rng&) const override { return x; }
    Tensor decode(const Tensor& x, const VaeTiling&) const override { return x; }
    bool has_encoder() const override { return false; }
    void release_weights() const override {}
    size_t weight_bytes() const override { return bytes_; }
    bool on_device() const override { return on_device_; }

  private:
    size_t bytes_;
    bool on_device_;
};

// A GPU user's model: the diffusion model's and the VAE's weights and activations are the
// device's; only what stays on the host (latents, results) is estimated against its memory.
TEST(MemoryEstimate, PartsOnADeviceCountNothingOfTheirOwn) {
    auto estimate = [](bool diffusion_on_device, bool codec_on_device) {
        ModelComponents m;
        m.diffusion = std::make_unique<SizedModel>(size_t{12} << 30, diffusion_on_device);
        m.codec = std::make_unique<SizedCodec>(size_t{1} << 30, codec_on_device);
        ImageRequest r;
        r.width = r.height = 1024;
        const MemoryInputs in = memory_inputs(m, r);
        return std::make_pair(in, estimate_generation_memory(in));
    };
    const auto [host_in, host] = estimate(false, false);
    EXPECT_DOUBLE_EQ(host_in.diffusion_weights, 12.0 * kGiB);
    EXPECT_GT(host.total(), 13.0 * kGiB);
    const auto [dit_in, dit] = estimate(true, false);
    EXPECT_EQ(dit_in.diffusion_weights, 0.0);
    EXPECT_DOUBLE_EQ(dit_in.codec_weights, 1.0 * kGiB);
    EXPECT_EQ(dit_in.footprint.diffusion_per_pixel, 0.0);
    // The decode is the peak now: the VAE's weights and activations, no 12 GiB of weights.
    EXPECT_GT(dit.total(), 1.0 * kGiB);
    EXPECT_LT(dit.total(), host.total() - 9.0 * kGiB);
    const auto [both_in, both] = estimate(true, true);
    EXPECT_EQ(both_in.codec_weights, 0.0);
    EXPECT_EQ(both_in.footprint.decode_per_pixel, 0.0);
    EXPECT_LT(both.total(), 1.0 * kGiB);  // the process's own and the result image
}

TEST(MemoryEstimate, AnAbsurdSizeIsRefusedNamingBothFigures) {
    const MemoryInputs in = inputs(1.72e9, 100032);
    const MemoryEstimate e = estimate_generation_memory(in);
    EXPECT_GT(e.total(), 1e13);  // tens of TB of activations
    try {
        check_generation_memory(e, 24 * kGiB, in, "a 100032x100032 image");
        ADD_FAILURE() << "accepted";
    } catch (const Error& err) {
        const std::string what = err.what();
        EXPECT_NE(what.find("a 100032x100032 image needs about"), std::string::npos) << what;
        EXPECT_NE(what.find("24.0 GiB available"), std::string::npos) << what;
        EXPECT_NE(what.find("a smaller size"), std::string::npos) << what;
        EXPECT_EQ(what.find("--vae-tiling"), std::string::npos) << what;  // it would not help
    }
}

TEST(MemoryEstimate, TilingIsNamedWhenTheDecodeIsThePeakAndTilingFits) {
    const MemoryInputs in = inputs(1.72e9, 2048);
    MemoryInputs tiled = in;
    tiled.tiled_decode = true;
    const double untiled_total = estimate_generation_memory(in).total();
    const double tiled_total = estimate_generation_memory(tiled).total();
    ASSERT_LT(tiled_total, untiled_total);
    const double available = (tiled_total + untiled_total) / 2;
    try {
        check_generation_memory(estimate_generation_memory(in), available, in, "2048x2048");
        ADD_FAILURE() << "accepted";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("--vae-tiling"), std::string::npos) << err.what();
    }
    EXPECT_NO_THROW(check_generation_memory(estimate_generation_memory(tiled), available, tiled,
                                            "2048x2048 tiled"));
}

TEST(MemoryEstimate, StreamedWeightsLowerTheEstimate) {
    MemoryInputs in = inputs(5.14e9, 1024);
    const double resident = estimate_generation_memory(in).total();
    in.diffusion_weights = in.codec_weights = 0;
    in.tiled_decode = true;  // the streamed mode tiles a decode above 640x640 (decode_tiling)
    EXPECT_LT(estimate_generation_memory(in).total(), resident - 4.5 * kGiB);
}

TEST(MemoryEstimate, BeforeLoadingOnlyAbsurdSizesFail) {
    EXPECT_NO_THROW(check_size_before_loading(1024, 1024, 1, false));
    EXPECT_NO_THROW(check_size_before_loading(200, 152, 4, false));
    EXPECT_THROW(check_size_before_loading(100000, 100000, 1, true), Error);
}

TEST(MemoryEstimate, TheMachineHasSomeMemory) {
    const double available = available_memory_bytes();
    EXPECT_GT(available, 64.0 * 1024 * 1024);
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

// The kernels' scratch joins the phase it belongs to: each thread's slots at the widest
// kernels' bound (ops/kernel_scratch.h) plus the calling thread's (the transformed Winograd
// weight: 36 x 516 x 512 floats at 512 -> 512 on AVX-512, ~38 MB).
TEST(MemoryEstimate, KernelScratchJoinsItsPhase) {
    MemoryInputs in = inputs(0.0, 1024);  // the decode is the peak
    const double without = estimate_generation_memory(in).total();
    EXPECT_EQ(estimate_generation_memory(in).scratch, 0.0);
    in.decode_kernels.winograd_channels = 512;
    in.decode_kernels.direct_channels = 128;
    in.decode_kernels.direct_width = in.decode_kernels.direct_height = 1024;
    in.decode_kernels.gemm_k = 15360;
    in.threads = 2;
    const MemoryEstimate two = estimate_generation_memory(in);
    EXPECT_NEAR(two.total() - without, two.scratch, 1.0);
    EXPECT_EQ(two.scratch, kernel_scratch_bytes(in.decode_kernels, 2));
    const ScratchBound w = winograd_scratch_bound(512, 512);
    EXPECT_GE(w.per_call, 36.0 * 512 * 512 * 4);  // U at least
    EXPECT_GT(two.scratch, w.per_call + 2 * w.per_thread);
    EXPECT_LT(two.scratch, 128.0 * 1024 * 1024);  // and not a guess of gigabytes
    // Each thread more adds its slots: the bounds' per-thread sum.
    in.threads = 6;
    const ScratchBound g = gemm_scratch_bound(15360);
    const ScratchBound d = conv_direct_scratch_bound(128, 3, 3, 1026, 1024, 6);
    const double per_thread = g.per_thread + d.per_thread + w.per_thread;
    const double six = kernel_scratch_bytes(in.decode_kernels, 6);
    EXPECT_NEAR(six, 6 * per_thread + g.per_call + d.per_call + w.per_call, 1.0);
    EXPECT_GT(estimate_generation_memory(in).scratch, two.scratch);
}

// The sampling phase's scratch (the products, a UNet's conv_out) counts when sampling is the
// peak.
TEST(MemoryEstimate, SamplingScratchCountsWhenSamplingIsThePeak) {
    MemoryInputs in = inputs(5.14e9, 1024);
    in.codec_weights = 0;
    in.threads = 4;
    in.sampling_kernels.gemm_k = 15360;
    in.sampling_kernels.direct_channels = 320;
    in.sampling_kernels.direct_width = in.sampling_kernels.direct_height = 128;
    const MemoryEstimate e = estimate_generation_memory(in);
    EXPECT_EQ(e.scratch, kernel_scratch_bytes(in.sampling_kernels, 4));
    EXPECT_GT(e.scratch, 4 * gemm_scratch_bound(15360).per_thread);
}

}  // namespace
}  // namespace sd
