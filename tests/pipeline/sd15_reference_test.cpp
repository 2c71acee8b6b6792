// The SD 1.x pipeline against the reference images of ../shared/fixtures/reference/sd15,
// called directly (the sd-cli test runs the same cases through the command line).
#include <gtest/gtest.h>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/model_files.h"
#include "pipeline/sd_pipeline.h"
#include "test_util.h"

namespace sd {
namespace {

Image8 read_rgb(const std::string& path) {
    image::Image img = image::read_image(path, 3);
    return {static_cast<int>(img.width), static_cast<int>(img.height), 3, img.pixels};
}

class Sd15Reference : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        files_ = new ModelFiles();
        files_->add(test::generated_checkpoint("sd15", "f16", 1), ModelRole::Checkpoint);
        PipelineOptions options;
        options.tokenizer_dir = test::fixtures_dir() + "/tokenizers";
        models_ = new SdModels(SdModels::load(*files_, options));
    }
    static void TearDownTestSuite() {
        delete models_;
        delete files_;
    }

    void expect_matches(const ImageRequest& r, const std::string& id) {
        std::vector<Image8> images = generate_images(*models_, r);
        ASSERT_EQ(images.size(), 1u);
        Image8 want = read_rgb(test::fixtures_dir() + "/reference/sd15/" + id + ".png");
        double p = test::psnr(images[0].pixels, want.pixels);
        std::printf("%s: PSNR %.2f dB\n", id.c_str(), p);
        RecordProperty("psnr_db", std::to_string(p));
        EXPECT_GE(p, 40.0) << id;
    }

    static ModelFiles* files_;
    static SdModels* models_;
};
ModelFiles* Sd15Reference::files_ = nullptr;
SdModels* Sd15Reference::models_ = nullptr;

ImageRequest base(const char* prompt, int steps, int w, int h, int64_t seed, float cfg,
                  SampleMethod method, Scheduler scheduler) {
    ImageRequest r;
    r.prompt = prompt;
    r.steps = steps;
    r.width = w;
    r.height = h;
    r.seed = seed;
    r.cfg_scale = cfg;
    r.method = method;
    r.scheduler = scheduler;
    r.rng = CUDA_RNG;
    return r;
}

TEST_F(Sd15Reference, Txt2ImgEuler) {
    expect_matches(
        base("a lovely cat", 4, 256, 256, 42, 7, EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER),
        "txt2img_euler");
}

TEST_F(Sd15Reference, Txt2ImgEulerA) {
    expect_matches(
        base("a photo of a dog", 6, 256, 256, 7, 7, EULER_A_SAMPLE_METHOD, DISCRETE_SCHEDULER),
        "txt2img_euler_a");
}

TEST_F(Sd15Reference, Txt2ImgDpmpp2mKarrasWeightedPrompt) {
    ImageRequest r = base("a (lovely:1.3) cat, [blurry] sunset", 5, 320, 256, 123, 5,
                          DPMPP2M_SAMPLE_METHOD, KARRAS_SCHEDULER);
    r.negative_prompt = "ugly, low quality";
    expect_matches(r, "txt2img_dpmpp2m_karras");
}

TEST_F(Sd15Reference, Img2ImgEuler) {
    ImageRequest r =
        base("a lovely cat", 5, 256, 256, 42, 7, EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER);
    r.init_image = read_rgb(test::fixtures_dir() + "/reference/sd15/txt2img_euler.png");
    r.strength = 0.6f;
    expect_matches(r, "img2img_euler");
}

}  // namespace
}  // namespace sd
