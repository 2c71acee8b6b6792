// Denoiser parametrisations against k-diffusion's formulas (external.py, EDM table 1).
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "sampling/denoiser.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(Denoiser, EpsScalings) {
    auto d = make_denoiser(EPS_PRED);
    for (float s : {0.03f, 1.0f, 14.6f}) {
        const Scalings sc = d->scalings(s);
        EXPECT_EQ(sc.c_skip, 1.0f);
        EXPECT_EQ(sc.c_out, -s);
        EXPECT_NEAR(sc.c_in, 1.0 / std::sqrt(1.0 + s * s), 1e-7);
    }
    EXPECT_FALSE(d->is_flow());
    // The timestep input is the DDPM schedule's fractional t.
    EXPECT_NEAR(d->sigma_to_t(d->schedule().sigma_max()), 999.0f, 1e-3);
}

TEST(Denoiser, VScalings) {
    for (Prediction p : {V_PRED, EDM_V_PRED}) {
        auto d = make_denoiser(p);
        for (float s : {0.03f, 1.0f, 14.6f}) {
            const Scalings sc = d->scalings(s);
            const double s2 = 1.0 + static_cast<double>(s) * s;
            EXPECT_NEAR(sc.c_skip, 1.0 / s2, 1e-7);
            EXPECT_NEAR(sc.c_out, -s / std::sqrt(s2), 1e-6);
            EXPECT_NEAR(sc.c_in, 1.0 / std::sqrt(s2), 1e-7);
        }
    }
    EXPECT_FLOAT_EQ(make_denoiser(EDM_V_PRED)->schedule().sigma_max(), 120.0f);
}

TEST(Denoiser, FlowScalingsAndNoise) {
    for (Prediction p : {FLOW_PRED, FLUX_FLOW_PRED}) {
        auto d = make_denoiser(p, 1.5f);
        EXPECT_TRUE(d->is_flow());
        const Scalings sc = d->scalings(0.4f);
        EXPECT_EQ(sc.c_skip, 1.0f);
        EXPECT_EQ(sc.c_out, -0.4f);
        EXPECT_EQ(sc.c_in, 1.0f);
        Tensor latent = Tensor::from_vector({3}, {1.0f, -2.0f, 0.5f});
        Tensor noise = Tensor::from_vector({3}, {0.5f, 0.25f, -1.0f});
        test::expect_close(d->noise_scaling(0.4f, noise, latent),
                           Tensor::from_vector({3}, {0.6f + 0.2f, -1.2f + 0.1f, 0.3f - 0.4f}), 1e-6,
                           0, "flow noise");
        test::expect_close(d->inverse_noise_scaling(0.2f, latent),
                           Tensor::from_vector({3}, {1.25f, -2.5f, 0.625f}), 1e-6, 0,
                           "flow inverse");
    }
    EXPECT_EQ(make_denoiser(FLOW_PRED, 3.0f)->sigma_to_t(0.5f), 500.0f);
    EXPECT_EQ(make_denoiser(FLUX_FLOW_PRED, 1.15f)->sigma_to_t(0.5f), 0.5f);
}

TEST(Denoiser, DenoisedCombinesOutputAndInput) {
    // eps: x0 = x - sigma * eps;  v: x0 = x / (1 + s^2) - s / sqrt(1 + s^2) * v.
    Tensor x = Tensor::from_vector({2, 2}, {1.0f, 2.0f, -3.0f, 0.5f});
    Tensor out = Tensor::from_vector({2, 2}, {0.1f, -0.2f, 0.3f, 0.0f});
    const float s = 2.0f;
    test::expect_close(make_denoiser(EPS_PRED)->denoised(out, x, s),
                       Tensor::from_vector({2, 2}, {0.8f, 2.4f, -3.6f, 0.5f}), 1e-6, 0, "eps");
    const float k = 1.0f / 5.0f, c = -2.0f / std::sqrt(5.0f);
    test::expect_close(make_denoiser(V_PRED)->denoised(out, x, s),
                       Tensor::from_vector({2, 2}, {k * 1 + c * 0.1f, k * 2 - c * 0.2f,
                                                    -3 * k + c * 0.3f, 0.5f * k}),
                       1e-6, 0, "v");
    // Non-contiguous input gives the same values.
    test::expect_close(make_denoiser(EPS_PRED)->denoised(test::non_contiguous_copy(out), x, s),
                       Tensor::from_vector({2, 2}, {0.8f, 2.4f, -3.6f, 0.5f}), 1e-6, 0,
                       "eps strided");
}

TEST(Denoiser, EpsNoiseScalingAddsScaledNoise) {
    auto d = make_denoiser(EPS_PRED);
    Tensor latent = Tensor::zeros({2});
    Tensor noise = Tensor::from_vector({2}, {1.0f, -0.5f});
    test::expect_close(d->noise_scaling(14.6f, noise, latent),
                       Tensor::from_vector({2}, {14.6f, -7.3f}), 1e-6, 0, "txt2img start");
    EXPECT_EQ(d->inverse_noise_scaling(0.0f, noise).to_vector(), noise.to_vector());
}

TEST(Denoiser, CheckpointAlphasAreUsed) {
    std::vector<float> ac(1000);
    for (int i = 0; i < 1000; ++i) ac[i] = 1.0f - 0.0009f * static_cast<float>(i + 1);
    auto d = make_denoiser(EPS_PRED, 3.0f, ac);
    EXPECT_NEAR(d->schedule().sigma_max(), std::sqrt(0.9 / 0.1), 1e-4);
}

TEST(Denoiser, PredictionOverrideAndBadInput) {
    EXPECT_EQ(resolve_prediction(PREDICTION_COUNT, EPS_PRED), EPS_PRED);
    EXPECT_EQ(resolve_prediction(V_PRED, EPS_PRED), V_PRED);
    EXPECT_THROW(resolve_prediction(static_cast<Prediction>(42), EPS_PRED), Error);
    EXPECT_THROW(make_denoiser(PREDICTION_COUNT), Error);
    // Flow variants of models this build does not have.
    EXPECT_THROW(make_denoiser(SEFI_FLOW_PRED), Error);
    EXPECT_THROW(make_denoiser(MINIT2I_FLOW_PRED), Error);
    EXPECT_THROW(make_denoiser(FLOW_PRED, -1.0f), Error);
    auto d = make_denoiser(EPS_PRED);
    EXPECT_THROW(d->denoised(Tensor::zeros({2}), Tensor::zeros({3}), 1.0f), Error);
    EXPECT_THROW(d->noise_scaling(1.0f, Tensor::zeros({2}), Tensor::zeros({2, 1})), Error);
}

}  // namespace
}  // namespace sd
