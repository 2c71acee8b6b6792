// The SD 2.x pipeline (v-prediction, OpenCLIP ViT-H) against ../shared/fixtures/reference/sd21.
#include "reference_cases.h"

namespace sd {
namespace {

using test::request;

class Sd21Reference : public testing::Test {
protected:
    static void SetUpTestSuite() { model_ = test::load_fixture_model("sd21", 2, V_PRED).release(); }
    static void TearDownTestSuite() { delete model_; }
    void expect_matches(const ImageRequest& r, const std::string& id) {
        test::expect_matches_reference(model_->models, r, "sd21", id);
    }
    static test::LoadedModel* model_;
};
test::LoadedModel* Sd21Reference::model_ = nullptr;

TEST_F(Sd21Reference, EulerV) {
    expect_matches(request("a lovely cat", 4, 256, 256, 42, 7, EULER_SAMPLE_METHOD, DISCRETE_SCHEDULER),
                   "sd21_euler_v");
}

TEST_F(Sd21Reference, Dpmpp2mKarrasV) {
    ImageRequest r = request("a watercolor painting of a harbor", 5, 256, 320, 5, 6, DPMPP2M_SAMPLE_METHOD,
                             KARRAS_SCHEDULER);
    r.negative_prompt = "blurry";
    expect_matches(r, "sd21_dpmpp2m_v");
}

}  // namespace
}  // namespace sd
