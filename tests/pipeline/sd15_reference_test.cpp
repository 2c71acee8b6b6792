// The SD 1.x pipeline against the reference images of ../shared/fixtures/reference/sd15,
// called directly (the sd-cli test runs the same cases through the command line).
#include "reference_cases.h"

namespace sd {
namespace {

using test::request;

class Sd15Reference : public testing::Test {
protected:
    static void SetUpTestSuite() { model_ = test::load_fixture_model("sd15", 1).release(); }
    static void TearDownTestSuite() { delete model_; }
    void expect_matches(const ImageRequest& r, const std::string& id) {
        test::expect_matches_reference(model_->models, r, "sd15", id);
    }
    static test::LoadedModel* model_;
};
test::LoadedModel* Sd15Reference::model_ = nullptr;

TEST_F(Sd15Reference, Txt2ImgEuler) {
    expect_matches(request("a lovely cat", 4, 256, 256, 42, 7, EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER),
                   "txt2img_euler");
}

TEST_F(Sd15Reference, Txt2ImgEulerA) {
    expect_matches(request("a photo of a dog", 6, 256, 256, 7, 7, EULER_A_SAMPLE_METHOD, DISCRETE_SCHEDULER),
                   "txt2img_euler_a");
}

TEST_F(Sd15Reference, Txt2ImgDpmpp2mKarrasWeightedPrompt) {
    ImageRequest r = request("a (lovely:1.3) cat, [blurry] sunset", 5, 320, 256, 123, 5, DPMPP2M_SAMPLE_METHOD,
                             KARRAS_SCHEDULER);
    r.negative_prompt = "ugly, low quality";
    expect_matches(r, "txt2img_dpmpp2m_karras");
}

TEST_F(Sd15Reference, Img2ImgEuler) {
    ImageRequest r = request("a lovely cat", 5, 256, 256, 42, 7, EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER);
    r.init_image = test::read_rgb(test::fixtures_dir() + "/reference/sd15/txt2img_euler.png");
    r.strength = 0.6f;
    expect_matches(r, "img2img_euler");
}

}  // namespace
}  // namespace sd
