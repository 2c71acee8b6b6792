// The generation loop's behaviour beyond the reference images, on the sd15 fixture with its UNet
// at a tenth of its widths (its CLIP and VAE full size) at small sizes: batches, masks, an
// inpaint checkpoint, VAE tiling, cancellation, bad requests. The narrow UNet keeps every path
// of the loop and makes the suite small enough for the sanitizer builds (docs/building.md).
#include "pipeline/generate.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cancel_after.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "image_compare.h"
#include "test_util.h"

namespace sd {
namespace {

std::unique_ptr<LoadedModel> load(const std::string& path, ModelFiles& files) {
    files.add(path, ModelRole::Checkpoint);
    LoadOptions options;
    options.tokenizer_dir = test::fixtures_dir() + "/tokenizers";
    return std::make_unique<LoadedModel>(load_model(files, options));
}

class Sd15Pipeline : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        files_ = new ModelFiles();
        loaded_ = load(test::tiny_sd15_checkpoint(), *files_).release();
        models_ = &loaded_->components;
    }
    static void TearDownTestSuite() {
        delete loaded_;
        delete files_;
    }
    static ImageRequest small(int64_t seed = 42) {
        ImageRequest r;
        r.prompt = "a lovely cat";
        r.width = r.height = 64;
        r.steps = 2;
        r.seed = seed;
        r.method = EULER_SAMPLE_METHOD;
        return r;
    }
    static ModelFiles* files_;
    static LoadedModel* loaded_;
    static const ModelComponents* models_;
};
ModelFiles* Sd15Pipeline::files_ = nullptr;
LoadedModel* Sd15Pipeline::loaded_ = nullptr;
const ModelComponents* Sd15Pipeline::models_ = nullptr;

image::Image solid(uint32_t w, uint32_t h, uint32_t channels, uint8_t value) {
    return {w, h, channels, std::vector<uint8_t>(static_cast<size_t>(w) * h * channels, value)};
}

TEST_F(Sd15Pipeline, BatchImagesUseSeedPlusIndex) {
    ImageRequest batch = small(42);
    batch.batch_count = 2;
    std::vector<image::Image> two = generate_images(*models_, batch);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0].width, 64);
    std::vector<image::Image> second = generate_images(*models_, small(43));
    EXPECT_EQ(two[1].pixels, second[0].pixels);
    EXPECT_NE(two[0].pixels, two[1].pixels);
}

TEST_F(Sd15Pipeline, WhiteMaskIsPlainImg2ImgAndBlackMaskKeepsTheImage) {
    ImageRequest r = small();
    r.init_image = generate_images(*models_, small(7))[0];
    r.strength = 0.8f;
    std::vector<uint8_t> plain = generate_images(*models_, r)[0].pixels;
    r.mask_image = solid(64, 64, 1, 255);
    EXPECT_EQ(generate_images(*models_, r)[0].pixels, plain);
    // Keeping every pixel: the sampler's result is the init latent itself, whatever it samples.
    r.mask_image = solid(64, 64, 1, 0);
    std::vector<uint8_t> kept = generate_images(*models_, r)[0].pixels;
    ImageRequest other = r;
    other.prompt = "a completely different prompt";
    other.method = DPMPP2M_SAMPLE_METHOD;
    EXPECT_EQ(generate_images(*models_, other)[0].pixels, kept);
}

// Streamed weights (--params-backend disk) and kept ones change where pages live, never
// a pixel: txt2img and img2img (the VAE encoder streams too) match the default mode.
TEST_F(Sd15Pipeline, StreamedAndKeptWeightsGiveTheSameImages) {
    ImageRequest img2img = small(5);
    img2img.init_image = generate_images(*models_, small(9))[0];
    img2img.strength = 0.6f;
    const std::vector<uint8_t> txt = generate_images(*models_, small())[0].pixels;
    const std::vector<uint8_t> img = generate_images(*models_, img2img)[0].pixels;
    for (bool streamed : {true, false}) {
        LoadOptions options;
        options.tokenizer_dir = test::fixtures_dir() + "/tokenizers";
        options.memory.residency = streamed ? Residency::Streamed : Residency::Resident;
        options.memory.keep_text_encoder = options.memory.keep_vae = !streamed;
        const LoadedModel other = load_model(*files_, options);
        EXPECT_EQ(generate_images(other.components, small())[0].pixels, txt)
            << "streamed " << streamed;
        EXPECT_EQ(generate_images(other.components, img2img)[0].pixels, img)
            << "streamed " << streamed;
    }
}

// SD 1.x takes no reference images: a request with one is refused naming the option,
// before anything runs; the pipeline's preparation is tested in ref_images_test.cpp.
TEST_F(Sd15Pipeline, ReferenceImagesAreRefusedForAFamilyWithoutThem) {
    ImageRequest r = small();
    r.ref_images.push_back(solid(64, 64, 3, 128));
    try {
        generate_images(*models_, r);
        FAIL() << "a reference image was accepted by SD 1.x";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--ref-image: SD 1.x"), std::string::npos) << e.what();
    }
}

TEST_F(Sd15Pipeline, VaeTilingCoversTheImage) {
    ImageRequest r = small();
    r.width = 128;
    std::vector<uint8_t> plain = generate_images(*models_, r)[0].pixels;
    r.vae_tiling.enabled = true;
    r.vae_tiling.tile_size = 64;  // larger than the 16x8 latent: one tile, the same decode
    EXPECT_EQ(generate_images(*models_, r)[0].pixels, plain);
    r.vae_tiling.tile_size = 8;
    r.vae_tiling.overlap = 0.5f;
    image::Image tiled = generate_images(*models_, r)[0];
    EXPECT_EQ(tiled.width, 128);
    EXPECT_EQ(tiled.height, 64);
    EXPECT_EQ(tiled.pixels.size(), plain.size());
}

TEST_F(Sd15Pipeline, CancelStopsSamplingAndAfterImageStopsTheBatch) {
    CancelToken cancel;
    std::atomic<bool> after_image{false};
    GenerationHooks hooks;
    int steps_seen = 0;
    hooks.cancel = &cancel;
    hooks.stop_after_image = &after_image;
    size_t rss_sampling = 0;
    hooks.progress = [&](int step, int, float) {
        ++steps_seen;
        rss_sampling = test::resident_bytes();  // the UNet's f16 pages are mapped in
        if (step == 1) cancel.cancel();
    };
    EXPECT_THROW(generate_images(*models_, small(), hooks), Cancelled);
    EXPECT_EQ(steps_seen, 1);
    // A cancelled generation leaves RSS as a finished one does: the UNet's pages are let go.
    const size_t unet_bytes = models_->diffusion->weight_bytes();
    ASSERT_GT(unet_bytes, size_t{10} << 20);
    EXPECT_LT(test::resident_bytes() + unet_bytes / 2, rss_sampling)
        << "the UNet's " << unet_bytes << " bytes of weights";
    std::printf("RSS while sampling %zu MiB, after the cancel %zu MiB, UNet weights %zu MiB\n",
                rss_sampling >> 20, test::resident_bytes() >> 20, unet_bytes >> 20);
    cancel.reset();
    ImageRequest batch = small();
    batch.batch_count = 3;
    hooks.progress = [&](int step, int steps, float) {
        if (step == steps) after_image = true;
    };
    EXPECT_EQ(generate_images(*models_, batch, hooks).size(), 1u);
}

// Wrappers that cancel the token as their phase starts, then run the real network: the
// cancel must stop the generation inside that network's ops.
struct CancellingUnet : DiffusionModel {
    const DiffusionModel& real;
    CancelToken& token;
    int cancel_at_call;  // 1-based
    mutable int calls = 0;
    CancellingUnet(const DiffusionModel& r, CancelToken& t, int at = 1)
        : real(r), token(t), cancel_at_call(at) {}
    Tensor forward(const Tensor& x, const Tensor& t, const Conditioning& c,
                   const ControlSignal* control) const override {
        if (++calls == cancel_at_call) token.cancel();
        return real.forward(x, t, c, control);
    }
    int64_t in_channels() const override { return real.in_channels(); }
    int64_t down_factor() const override { return real.down_factor(); }
    void release_weights() const override { real.release_weights(); }
};
struct CancellingDecoder : LatentCodec {
    const LatentCodec& real;
    CancelToken& token;
    CancellingDecoder(const LatentCodec& r, CancelToken& t) : real(r), token(t) {}
    Tensor encode(const Tensor& image01, Rng& rng) const override {
        return real.encode(image01, rng);
    }
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override {
        token.cancel();
        return real.decode(latent, tiling);
    }
    bool has_encoder() const override { return real.has_encoder(); }
    void release_weights() const override { real.release_weights(); }
};

TEST_F(Sd15Pipeline, CancelReachesInsideTheUnetTheHiresPassAndTheDecode) {
    ModelComponents& m = loaded_->components;
    CancelToken token;
    GenerationHooks hooks;
    hooks.cancel = &token;
    int steps_seen = 0;
    hooks.progress = [&](int, int, float) { ++steps_seen; };
    std::unique_ptr<DiffusionModel> unet = std::move(m.diffusion);
    m.diffusion = std::make_unique<CancellingUnet>(*unet, token);
    EXPECT_THROW(generate_images(m, small(), hooks), Cancelled);
    EXPECT_EQ(steps_seen, 0) << "the first step's UNet evaluation stops";
    // The hires fix's second pass: 2 steps of 2 evaluations (guidance), then the 5th stops.
    ImageRequest hires = small();
    hires.hires.enabled = true;
    hires.hires.target_width = hires.hires.target_height = 128;
    token.reset();
    steps_seen = 0;
    m.diffusion = std::make_unique<CancellingUnet>(*unet, token, 5);
    EXPECT_THROW(generate_images(m, hires, hooks), Cancelled);
    EXPECT_EQ(steps_seen, 2) << "the first pass finished, the hires pass stopped";
    m.diffusion = std::move(unet);
    token.reset();
    steps_seen = 0;
    std::unique_ptr<LatentCodec> vae = std::move(m.codec);
    m.codec = std::make_unique<CancellingDecoder>(*vae, token);
    EXPECT_THROW(generate_images(m, small(), hooks), Cancelled);
    EXPECT_EQ(steps_seen, 2) << "sampling finished, the decode stopped";
    m.codec = std::move(vae);
    token.reset();
    EXPECT_EQ(generate_images(m, small(), hooks).size(), 1u) << "the model still works";
}

// A prompt of ~300 KB (thousands of CLIP windows: minutes of text encoding) cancelled while
// it is tokenized or encoded ends within 2 s.
TEST_F(Sd15Pipeline, LongPromptCancelledWithinTwoSeconds) {
    ImageRequest r = small();
    r.prompt.clear();
    while (r.prompt.size() < 300000) r.prompt += "a (lovely:1.1) cat on a mat, ";
    CancelToken token;
    GenerationHooks hooks;
    hooks.cancel = &token;
    test::CancelAfter canceller(token, 500);
    EXPECT_THROW(generate_images(*models_, r, hooks), Cancelled);
    const double ended = canceller.ended();
    EXPECT_LT(ended, 2.0) << "seconds from the cancel to the end";
    std::printf("300 KB prompt: ended %.3f s after the cancel\n", ended);
}

TEST_F(Sd15Pipeline, BadRequestsAreErrors) {
    ImageRequest r = small();
    r.width = 0;  // off-grid sizes are aligned (image_size_test), empty ones refused
    EXPECT_THROW(generate_images(*models_, r), Error);
    r = small();
    r.height = -64;
    EXPECT_THROW(generate_images(*models_, r), Error);
    r = small();
    r.steps = 0;
    EXPECT_THROW(generate_images(*models_, r), Error);
    r = small();
    r.strength = 1.5f;
    EXPECT_THROW(generate_images(*models_, r), Error);
    r = small();
    r.batch_count = 0;
    EXPECT_THROW(generate_images(*models_, r), Error);
}

// An SD 1.x inpaint checkpoint: the sd15 manifest with a 9-channel conv_in, its UNet narrowed
// as the suite's.
TEST(Sd15InpaintPipeline, RunsTxt2ImgAndInpaint) {
    std::string manifest = test::temp_path("sd15inpaint.tsv");
    {
        std::ifstream in(test::fixtures_dir() + "/manifests/sd15.tsv");
        std::ofstream out(manifest);
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("model.diffusion_model.input_blocks.0.0.weight\t", 0) == 0)
                line = "model.diffusion_model.input_blocks.0.0.weight\tf16\t320\t9\t3\t3";
            out << line << "\n";
        }
    }
    const std::string narrow = test::temp_path("sd15inpaint_div10.tsv");
    test::write_scaled_unet_manifest(manifest, narrow, 10, false);
    std::string path = test::temp_path("sd15inpaint_f16.safetensors");
    test::run_or_fail("/usr/bin/python3 " + test::fixtures_dir() + "/mkckpt.py " + narrow + " " +
                      path + " --dtype f16 --seed 3 2>/dev/null");
    {
        ModelFiles files;
        std::unique_ptr<LoadedModel> loaded = load(path, files);
        EXPECT_EQ(loaded->components.family_name, "SD 1.x inpaint");
        EXPECT_EQ(loaded->components.extra_input, ExtraInput::MaskAndMaskedLatent);
        const ModelComponents* m = &loaded->components;
        ImageRequest r;
        r.prompt = "a cat";
        r.width = r.height = 64;
        r.steps = 2;
        image::Image txt = generate_images(*m, r)[0];
        EXPECT_EQ(txt.width, 64);
        r.init_image = txt;
        image::Image mask = solid(64, 64, 1, 0);
        for (int y = 0; y < 32; ++y) {
            for (int x = 0; x < 64; ++x) mask.pixels[static_cast<size_t>(y * 64 + x)] = 255;
        }
        r.mask_image = mask;
        image::Image painted = generate_images(*m, r)[0];
        EXPECT_EQ(painted.pixels.size(), txt.pixels.size());
        EXPECT_NE(painted.pixels, txt.pixels);
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace sd
