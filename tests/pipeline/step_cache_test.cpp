// Step caches in the generation loop: a mode that does not apply to the model is refused
// naming both, reused steps and forecast calls leave the network out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/error.h"
#include "pipeline/fake_components.h"
#include "pipeline/generate.h"

namespace sd {
namespace {

// Answers 0 (a flow model's x then stays put: every input is the same); counts its calls.
class CountingModel : public DiffusionModel {
  public:
    explicit CountingModel(CacheTarget target) : target_(target) {}
    Tensor forward(const Tensor& x, const Tensor&, const Conditioning&,
                   const ControlSignal*) const override {
        ++calls;
        return Tensor::zeros(x.shape());
    }
    int64_t in_channels() const override { return 4; }
    int64_t down_factor() const override { return 1; }
    void release_weights() const override {}
    CacheTarget cache_target() const override { return target_; }
    mutable int calls = 0;

  private:
    CacheTarget target_;
};

ModelComponents components(CacheTarget target, const CountingModel** model) {
    ModelComponents m;
    m.family_name = target == CacheTarget::UNet ? "SD 1.x" : "FLUX.1";
    m.conditioner = std::make_unique<test::ConstantConditioner>();
    auto net = std::make_unique<CountingModel>(target);
    *model = net.get();
    m.diffusion = std::move(net);
    m.codec = std::make_unique<test::BlankCodec>();
    m.denoiser = make_denoiser(FLOW_PRED);
    return m;
}

ImageRequest request(CacheMode mode, float cfg) {
    ImageRequest r;
    r.width = r.height = 64;
    r.steps = 10;
    r.cfg_scale = cfg;
    r.method = EULER_SAMPLE_METHOD;
    r.cache.mode = mode;
    return r;
}

TEST(StepCacheLoop, ModeThatDoesNotApplyIsRefused) {
    const CountingModel* net = nullptr;
    ModelComponents m = components(CacheTarget::UNet, &net);
    try {
        generate_images(m, request(CacheMode::DbCache, 1.0f), {});
        FAIL() << "dbcache ran on a UNet";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("dbcache"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("SD 1.x"), std::string::npos) << e.what();
    }
    EXPECT_EQ(net->calls, 0);
}

TEST(StepCacheLoop, DbCacheReusesTheStepsOfItsWindow) {
    const CountingModel* net = nullptr;
    ModelComponents m = components(CacheTarget::DiT, &net);
    // 10 steps: steps 1..8 are in the window; step 1 computes, 2..8 see the same input and
    // reuse; steps 0, 1 and 9 run the network, on both sides of guidance.
    generate_images(m, request(CacheMode::DbCache, 5.0f), {});
    EXPECT_EQ(net->calls, 3 * 2);
}

TEST(StepCacheLoop, SpectrumForecastsWholeCalls) {
    const CountingModel* net = nullptr;
    ModelComponents m = components(CacheTarget::DiT, &net);
    // Defaults over 10 steps: C C C C F C F C F C (the last from 90% on).
    generate_images(m, request(CacheMode::Spectrum, 1.0f), {});
    EXPECT_EQ(net->calls, 7);
}

// Reused and forecast steps still report progress (the previews hang on it) and a cancel
// during them stops the run, as without a cache.
TEST(StepCacheLoop, ProgressAndCancelKeepWorking) {
    const CountingModel* net = nullptr;
    ModelComponents m = components(CacheTarget::DiT, &net);
    std::vector<int> steps_seen;
    GenerationHooks hooks;
    hooks.progress = [&](int step, int, float) { steps_seen.push_back(step); };
    generate_images(m, request(CacheMode::DbCache, 5.0f), hooks);
    EXPECT_EQ(steps_seen.size(), 10u);  // every step, reused or not
    CancelToken cancel;
    hooks.cancel = &cancel;
    steps_seen.clear();
    // Step 4 is a reused one (see DbCacheReusesTheStepsOfItsWindow).
    hooks.progress = [&](int step, int, float) {
        steps_seen.push_back(step);
        if (step == 4) cancel.cancel();
    };
    EXPECT_THROW(generate_images(m, request(CacheMode::DbCache, 5.0f), hooks), Cancelled);
    EXPECT_EQ(steps_seen.size(), 4u);
}

}  // namespace
}  // namespace sd
