// Skip-layer guidance in the generation loop: the third pass (the positive conditioning with
// the request's layers left out) runs on the steps strictly inside (start, end) x the sigma
// count, as the reference counts them, and its difference to the conditional output is added
// times the scale.
#include <gtest/gtest.h>

#include <vector>

#include "pipeline/fake_components.h"
#include "pipeline/generate.h"

namespace sd {
namespace {

// Outputs 0 everywhere; records each call's skipped layers and whether it was the
// negative side (context 0).
class RecordingModel : public DiffusionModel {
  public:
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning& c,
                   const ControlSignal*) const override {
        calls.push_back(c.skip_layers);
        return Tensor::zeros(x.shape());
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 1; }
    void release_weights() const override {}
    bool can_skip_layers() const override { return true; }
    mutable std::vector<std::vector<int>> calls;
};

TEST(SkipLayerGuidance, ThirdPassOnTheStepsOfItsWindow) {
    ModelComponents m;
    m.conditioner = std::make_unique<test::ConstantConditioner>();
    auto model = std::make_unique<RecordingModel>();
    const RecordingModel* recorder = model.get();
    m.diffusion = std::move(model);
    m.codec = std::make_unique<test::BlankCodec>();
    m.denoiser = make_denoiser(FLOW_PRED);
    ImageRequest r;
    r.width = r.height = 64;
    r.steps = 30;
    r.cfg_scale = 5.0f;
    r.method = EULER_SAMPLE_METHOD;
    r.slg.layers = {7, 8, 9};
    r.slg.scale = 2.5f;  // start 0.01, end 0.2: steps 1..5 of 30 (31 sigmas: 0 < step < 6)
    generate_images(m, r, {});
    // Each step: cond, uncond, then the skip-layer pass when the step is in the window.
    std::vector<int> skipped_steps;
    const auto& calls = recorder->calls;
    for (size_t i = 0, step = 1; i + 1 < calls.size(); ++step) {
        EXPECT_TRUE(calls[i].empty() && calls[i + 1].empty()) << "call " << i;
        i += 2;
        if (i < calls.size() && !calls[i].empty()) {
            EXPECT_EQ(calls[i], (std::vector<int>{7, 8, 9}));
            skipped_steps.push_back(static_cast<int>(step));
            ++i;
        }
    }
    EXPECT_EQ(skipped_steps, (std::vector<int>{1, 2, 3, 4, 5}));
    EXPECT_EQ(recorder->calls.size(), 30u * 2 + 5);
    recorder->calls.clear();
    r.slg.scale = 0.0f;  // off
    generate_images(m, r, {});
    EXPECT_EQ(recorder->calls.size(), 30u * 2);
}

}  // namespace
}  // namespace sd
