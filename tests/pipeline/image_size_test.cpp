// Generation sizes settled as the reference settles them: each side aligned up to the model's
// grid with a warning (CLI, C API and server alike), input images of other sizes fitted to
// it, a prompt over the length limit refused before encoding; on stand-in components that
// compute nothing, so a 1000x1000 request costs milliseconds.
#include "pipeline/image_size.h"

#include <gtest/gtest.h>

#include <chrono>

#include "base/error.h"
#include "pipeline/generate.h"
#include "sampling/denoiser.h"

namespace sd {
namespace {

TEST(ImageSize, AlignsUpToTheMultiple) {
    int w = 200, h = 152;
    align_size_up(w, h, 64, "test");
    EXPECT_EQ(w, 256);
    EXPECT_EQ(h, 192);
    w = h = 1000;
    align_size_up(w, h, 64, "test");
    EXPECT_EQ(w, 1024);
    EXPECT_EQ(h, 1024);
    w = 512, h = 768;  // already on the grid: unchanged
    align_size_up(w, h, 64, "test");
    EXPECT_EQ(w, 512);
    EXPECT_EQ(h, 768);
    w = 77, h = 51;
    align_size_up(w, h, 16, "test");  // a DiT family's grid
    EXPECT_EQ(w, 80);
    EXPECT_EQ(h, 64);
    w = 0, h = 64;
    EXPECT_THROW(align_size_up(w, h, 64, "test"), Error);
    w = INT32_MAX, h = 64;
    EXPECT_THROW(align_size_up(w, h, 64, "test"), Error);
}

// A prompt's tokens: one a word, as the limit counts them (75 a chunk) for the test.
class CountingConditioner : public Conditioner {
  public:
    Conditioning encode(const ConditionRequest&) const override {
        ++encodes;
        return {Tensor::zeros({1, 1, 8}), {}};
    }
    size_t count_tokens(const std::string& prompt) const override {
        ++counts;
        return (static_cast<size_t>(std::count(prompt.begin(), prompt.end(), ' ')) / 75 + 1) * 75;
    }
    void release_weights() const override {}
    mutable int encodes = 0, counts = 0;
};

class ZeroModel : public DiffusionModel {
  public:
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning&,
                   const ControlSignal*) const override {
        return Tensor::zeros(x.shape());
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 8; }  // a UNet's: a 64-pixel grid
    void release_weights() const override {}
};

// Latent -> grey image 8x its size; image -> its 8x subsampled first channels.
class ScaleCodec : public LatentCodec {
  public:
    Tensor encode(const Tensor& image01, Rng&) const override {
        seen_h = image01.size(2), seen_w = image01.size(3);
        return Tensor::zeros({1, 4, image01.size(2) / 8, image01.size(3) / 8});
    }
    Tensor decode(const Tensor& latent, const VaeTiling&) const override {
        return Tensor::zeros({1, 3, latent.size(2) * 8, latent.size(3) * 8});
    }
    bool has_encoder() const override { return true; }
    void release_weights() const override {}
    mutable int64_t seen_h = 0, seen_w = 0;
};

class StandIn : public testing::Test {
  protected:
    void SetUp() override {
        auto conditioner = std::make_unique<CountingConditioner>();
        text = conditioner.get();
        m.conditioner = std::move(conditioner);
        m.diffusion = std::make_unique<ZeroModel>();
        auto codec = std::make_unique<ScaleCodec>();
        vae = codec.get();
        m.codec = std::move(codec);
        m.denoiser = make_denoiser(EPS_PRED);
    }
    static ImageRequest request(int w, int h) {
        ImageRequest r;
        r.width = w;
        r.height = h;
        r.steps = 1;
        r.cfg_scale = 1.0f;
        r.method = EULER_SAMPLE_METHOD;
        return r;
    }
    ModelComponents m;
    const CountingConditioner* text = nullptr;
    const ScaleCodec* vae = nullptr;
};

TEST_F(StandIn, SizeMultipleIsTheLatentFactorTimesTheModelsDownFactor) {
    EXPECT_EQ(size_multiple(m), 64);
    m.latent.factor = 16;
    EXPECT_EQ(size_multiple(m), 128);
}

TEST_F(StandIn, UnsettledSizesAreRefusedAndSettledOnesRun) {
    // The resolver (api/image_request.cpp) aligns a size, once; the loop takes settled ones.
    EXPECT_THROW(generate_images(m, request(200, 152)), Error);
    int w = 200, h = 152;
    align_size_up(w, h, size_multiple(m), "test");
    EXPECT_EQ(w, 256);
    EXPECT_EQ(h, 192);
    const std::vector<image::Image> out = generate_images(m, request(w, h));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].width, 256u);
    EXPECT_EQ(out[0].height, 192u);
}

TEST_F(StandIn, InitImageAndMaskOfOtherSizesAreFittedToTheRequestSize) {
    ImageRequest r = request(128, 64);
    r.init_image = image::Image{77, 51, 3, std::vector<uint8_t>(77 * 51 * 3, 100)};
    r.mask_image = image::Image{40, 30, 1, std::vector<uint8_t>(40 * 30, 255)};
    r.strength = 0.5f;
    const ImageRequest settled = settle_request(m, r);
    EXPECT_EQ(settled.width, 128);
    EXPECT_EQ(settled.height, 64);
    EXPECT_EQ(settled.init_image->width, 128u);
    EXPECT_EQ(settled.mask_image->height, 64u);
    const std::vector<image::Image> out = generate_images(m, r);
    EXPECT_EQ(out[0].width, 128u);
    EXPECT_EQ(vae->seen_w, 128);  // the codec encoded the fitted image
    EXPECT_EQ(vae->seen_h, 64);
}

TEST_F(StandIn, AnAbsurdSizeIsRefusedAtOnceWithTheEstimate) {
    const auto start = std::chrono::steady_clock::now();
    try {
        generate_images(m, request(100032, 100032));
        ADD_FAILURE() << "a 100032x100032 image was accepted";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("100032x100032"), std::string::npos) << what;
        EXPECT_NE(what.find("GiB"), std::string::npos) << what;
        EXPECT_NE(what.find("available"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(text->encodes, 0);  // refused before any network ran
}

TEST_F(StandIn, AbsurdStepCountIsRefused) {
    ImageRequest r = request(64, 64);
    r.steps = 2000000000;  // its schedule alone would take 8 GB
    EXPECT_THROW(generate_images(m, r), Error);
    EXPECT_EQ(text->encodes, 0);
}

TEST_F(StandIn, APromptOverTheLimitIsRefusedBeforeEncoding) {
    ImageRequest r = request(64, 64);
    r.max_prompt_tokens = 150;
    r.prompt = std::string(5 << 20, 'a');  // 5 MB: refused by its bytes, never tokenized
    const auto start = std::chrono::steady_clock::now();
    try {
        generate_images(m, r);
        ADD_FAILURE() << "a 5 MB prompt was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("--max-prompt-tokens"), std::string::npos);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(text->counts, 0);
    std::string words;
    for (int i = 0; i < 300; ++i) words += "cat ";
    r.prompt = words;  // 1.2 kB but 375 tokens by the stand-in's count
    try {
        generate_images(m, r);
        ADD_FAILURE() << "a 375-token prompt was accepted with a limit of 150";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("375 tokens"), std::string::npos) << e.what();
    }
    EXPECT_EQ(text->encodes, 0);
    r.max_prompt_tokens = 0;  // no limit
    EXPECT_EQ(generate_images(m, r).size(), 1u);
}

}  // namespace
}  // namespace sd
