// The extra input of inpaint and control-latent models (pipeline/extra_input.h): the pixel
// mask folded into f x f cells (channel dy*f + dx), the masked picture, each layout's channel
// order, against values worked out by hand; the loop appending them to the model's input
// (a codec encoding an image's mean); requests lacking what a model needs refused with the
// options named.
#include "pipeline/extra_input.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "io/io_test_util.h"
#include "pipeline/fake_components.h"
#include "pipeline/generate.h"
#include "test_util.h"

namespace sd {
namespace {

// A pixel mask whose value tells where it came from: 100 * row + col.
Tensor numbered_mask(int64_t h, int64_t w) {
    std::vector<float> v;
    for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<float>(100 * y + x));
    }
    return Tensor::from_vector({1, 1, h, w}, v);
}

TEST(ExtraInput, FoldMaskPutsEachCellsPixelsInRowMajorChannels) {
    // 4x6 pixels in 2x2 cells: latent 2x3, channel dy*2 + dx.
    const Tensor folded = fold_mask(numbered_mask(4, 6), 2);
    ASSERT_EQ(folded.shape(), (Shape{1, 4, 2, 3}));
    const std::vector<float> v = folded.to_vector();
    const std::vector<float> want = {
        0,   2,   4,   200, 202, 204,  // channel 0: (dy 0, dx 0) of each cell
        1,   3,   5,   201, 203, 205,  // channel 1: dx 1
        100, 102, 104, 300, 302, 304,  // channel 2: dy 1
        101, 103, 105, 301, 303, 305};
    EXPECT_EQ(v, want);
    // FLUX's 8x8 cells: 64 channels; pixel (8 + 3, 16 + 5) is channel 3*8 + 5 of latent (1, 2).
    const Tensor f8 = fold_mask(numbered_mask(16, 24), 8);
    ASSERT_EQ(f8.shape(), (Shape{1, 64, 2, 3}));
    EXPECT_EQ(f8.to_vector()[(29 * 2 + 1) * 3 + 2], 100.0f * 11 + 21);
    EXPECT_THROW(fold_mask(numbered_mask(4, 6), 4), Error);  // 6 is no multiple of 4
}

TEST(ExtraInput, MaskedImageIsGreyWhereRepainted) {
    const Tensor image = Tensor::from_vector({1, 1, 1, 3}, {0.2f, 0.9f, 0.0f});
    const Tensor mask = Tensor::from_vector({1, 1, 1, 3}, {1.0f, 0.0f, 1.0f});
    EXPECT_EQ(masked_image(image, mask).to_vector(), (std::vector<float>{0.5f, 0.9f, 0.5f}));
}

TEST(ExtraInput, EachLayoutsChannelOrder) {
    ExtraInputParts p;
    p.mask = numbered_mask(2, 2);                      // one 2x2 cell
    p.latent_mask = Tensor::full({1, 1, 1, 1}, 7.0f);  // latent size 1x1
    p.masked_latent = Tensor::from_vector({1, 2, 1, 1}, {-1.0f, -2.0f});
    p.control_latent = Tensor::from_vector({1, 2, 1, 1}, {5.0f, 6.0f});
    // FLUX.1 Fill: the masked-image latent, then the mask's cell.
    EXPECT_EQ(assemble_extra_input(ExtraInput::MaskedLatentAndPixelMask, p, 2).to_vector(),
              (std::vector<float>{-1, -2, 0, 1, 100, 101}));
    // SD inpaint: the latent-size mask, then the masked-image latent.
    EXPECT_EQ(assemble_extra_input(ExtraInput::MaskAndMaskedLatent, p, 2).to_vector(),
              (std::vector<float>{7, -1, -2}));
    EXPECT_EQ(assemble_extra_input(ExtraInput::ControlLatent, p, 2).to_vector(),
              (std::vector<float>{5, 6}));
    EXPECT_FALSE(assemble_extra_input(ExtraInput::None, p, 2).defined());
}

// Encodes an image as a 4-channel latent filled with the image's mean.
class MeanCodec : public test::BlankCodec {
  public:
    Tensor encode(const Tensor& image01, Rng&) const override {
        const std::vector<float> v = image01.to_vector();
        double sum = 0;
        for (float x : v) sum += x;
        return Tensor::full({1, 4, image01.size(2) / 8, image01.size(3) / 8},
                            static_cast<float>(sum / static_cast<double>(v.size())));
    }
};

// Records the first call's input; predicts 0.
class InputRecorder : public DiffusionModel {
  public:
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning&,
                   const ControlSignal*) const override {
        if (!first.defined()) first = x.contiguous();
        return Tensor::zeros({1, 4, x.size(2), x.size(3)});
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 1; }
    void release_weights() const override {}
    mutable Tensor first;
};

image::Image solid(uint32_t channels, uint8_t v) {
    return {64, 64, channels, std::vector<uint8_t>(64 * 64 * channels, v)};
}

// The model's input of a one-step 64x64 generation with the given extra input.
Tensor first_input(ExtraInput kind, const ImageRequest& request) {
    ModelComponents m;
    m.family_name = "test";
    m.conditioner = std::make_unique<test::ConstantConditioner>();
    auto model = std::make_unique<InputRecorder>();
    const InputRecorder* recorder = model.get();
    m.diffusion = std::move(model);
    m.codec = std::make_unique<MeanCodec>();
    m.denoiser = make_denoiser(FLOW_PRED);
    m.latent.scale = 1.0f;
    m.extra_input = kind;
    ImageRequest r = request;
    r.width = r.height = 64;
    r.steps = 1;
    r.strength = 1.0f;
    r.cfg_scale = 1.0f;
    r.method = EULER_SAMPLE_METHOD;
    generate_images(m, r, {});
    return recorder->first;
}

TEST(ExtraInput, TheLoopAppendsTheControlLatent) {
    ImageRequest r;
    r.control_image = solid(3, 51);  // 0.2
    const Tensor x = first_input(ExtraInput::ControlLatent, r);
    ASSERT_EQ(x.shape(), (Shape{1, 8, 8, 8}));
    const std::vector<float> v = x.narrow(1, 4, 4).contiguous().to_vector();
    for (float e : v) ASSERT_NEAR(e, 0.2f, 1e-6f);
}

TEST(ExtraInput, TheLoopAppendsFillsMaskedLatentAndMaskCells) {
    ImageRequest r;
    r.init_image = solid(3, 255);
    image::Image mask = solid(1, 0);
    for (uint32_t y = 0; y < 64; ++y) {
        for (uint32_t x = 0; x < 20; ++x) mask.pixels[y * 64 + x] = 255;  // repaint x < 20
    }
    r.mask_image = mask;
    const Tensor x = first_input(ExtraInput::MaskedLatentAndPixelMask, r);
    ASSERT_EQ(x.shape(), (Shape{1, 4 + 4 + 64, 8, 8}));
    // The masked picture: grey (0.5) on 20 of 64 columns, white elsewhere.
    const float mean = (20 * 0.5f + 44 * 1.0f) / 64;
    for (float e : x.narrow(1, 4, 4).contiguous().to_vector()) ASSERT_NEAR(e, mean, 1e-5f);
    // Cell column 2 holds pixel columns 16..23: dx 0..3 repainted, 4..7 kept.
    const std::vector<float> cells = x.narrow(1, 8, 64).contiguous().to_vector();
    for (int64_t k = 0; k < 64; ++k) {
        for (int64_t lx = 0; lx < 8; ++lx) {
            const float want = lx * 8 + k % 8 < 20 ? 1.0f : 0.0f;
            ASSERT_EQ(cells[static_cast<size_t>((k * 8 + 3) * 8 + lx)], want) << k << " " << lx;
        }
    }
}

TEST(ExtraInput, MissingImagesAreNamedByOption) {
    ModelComponents m;
    m.family_name = "FLUX.1 Fill";
    m.extra_input = ExtraInput::MaskedLatentAndPixelMask;
    ImageRequest r;
    std::string error = test::error_of([&] { check_extra_input(m, r); });
    EXPECT_NE(error.find("-i"), std::string::npos) << error;
    EXPECT_NE(error.find("--mask"), std::string::npos) << error;
    r.init_image = image::Image{};
    error = test::error_of([&] { check_extra_input(m, r); });
    EXPECT_NE(error.find("no mask is given"), std::string::npos) << error;
    r.mask_image = image::Image{};
    EXPECT_NO_THROW(check_extra_input(m, r));

    m.family_name = "FLUX.1 Canny/Depth";
    m.extra_input = ExtraInput::ControlLatent;
    ImageRequest c;
    error = test::error_of([&] { check_extra_input(m, c); });
    EXPECT_NE(error.find("--control-image"), std::string::npos) << error;
    c.control_image = image::Image{};
    EXPECT_NO_THROW(check_extra_input(m, c));
}

}  // namespace
}  // namespace sd
