// Denoiser parametrisations: eps, v, EDM v and rectified flow.
#include "sampling/denoiser.h"

#include <cmath>

#include "base/error.h"

namespace sd {

namespace {

constexpr float kSigmaData = 1.0f;  // sigma_data of the CompVis wrappers

// c_skip / c_out / c_in of an eps model (CompVisDenoiser.get_scalings).
Scalings eps_scalings(float sigma) {
    return {1.0f, -sigma, 1.0f / std::sqrt(sigma * sigma + kSigmaData * kSigmaData)};
}

// c_skip / c_out / c_in of a v model (CompVisVDenoiser.get_scalings).
Scalings v_scalings(float sigma) {
    const float s2 = sigma * sigma + kSigmaData * kSigmaData;
    return {kSigmaData * kSigmaData / s2, -sigma * kSigmaData / std::sqrt(s2),
            1.0f / std::sqrt(s2)};
}

// c_skip / c_out / c_in of a flow model (DiscreteFlowDenoiser.get_scalings).
Scalings flow_scalings(float sigma) {
    return {1.0f, -sigma, 1.0f};
}

// An f32 contiguous tensor of a's shape with out[i] = f(a[i], b[i]).
template <class F>
Tensor zip(const Tensor& a_in, const Tensor& b_in, const char* what, F f) {
    SD_CHECK(a_in.dtype() == DType::F32 && b_in.dtype() == DType::F32, "%s: tensors must be f32",
             what);
    SD_CHECK(a_in.shape() == b_in.shape(), "%s: shapes %s and %s differ", what,
             a_in.shape().to_string().c_str(), b_in.shape().to_string().c_str());
    const Tensor a = a_in.contiguous();
    const Tensor b = b_in.contiguous();
    Tensor out = Tensor::empty(a.shape());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = f(pa[i], pb[i]);
    return out;
}

}  // namespace

Denoiser::Denoiser(Prediction prediction, std::unique_ptr<NoiseSchedule> schedule)
    : prediction_(prediction), schedule_(std::move(schedule)) {
    SD_CHECK(schedule_ != nullptr, "denoiser without a noise schedule");
}

bool Denoiser::is_flow() const {
    return prediction_ == FLOW_PRED || prediction_ == FLUX_FLOW_PRED;
}

Scalings Denoiser::scalings(float sigma) const {
    switch (prediction_) {
        case EPS_PRED:
            return eps_scalings(sigma);
        case V_PRED:
        case EDM_V_PRED:
            return v_scalings(sigma);
        default:
            return flow_scalings(sigma);
    }
}

Tensor Denoiser::denoised(const Tensor& model_out, const Tensor& x, float sigma) const {
    const Scalings s = scalings(sigma);
    return zip(model_out, x, "denoised",
               [&](float out, float xv) { return out * s.c_out + xv * s.c_skip; });
}

Tensor Denoiser::noise_scaling(float sigma, const Tensor& noise, const Tensor& latent) const {
    if (is_flow()) {  // DiscreteFlowDenoiser.noise_scaling
        return zip(latent, noise, "noise_scaling",
                   [&](float l, float n) { return l * (1.0f - sigma) + n * sigma; });
    }
    // CompVisDenoiser.noise_scaling
    return zip(latent, noise, "noise_scaling", [&](float l, float n) { return l + n * sigma; });
}

Tensor Denoiser::inverse_noise_scaling(float sigma, const Tensor& latent) const {
    if (!is_flow()) return latent;
    const float scale = 1.0f / (1.0f - sigma);  // DiscreteFlowDenoiser.inverse_noise_scaling
    return zip(latent, latent, "inverse_noise_scaling", [&](float l, float) { return l * scale; });
}

std::unique_ptr<Denoiser> make_denoiser(Prediction prediction, float flow_shift,
                                        const std::vector<float>& alphas_cumprod) {
    std::unique_ptr<NoiseSchedule> schedule;
    switch (prediction) {
        case EPS_PRED:
        case V_PRED:
            schedule = alphas_cumprod.size() == static_cast<size_t>(kTrainTimesteps)
                           ? std::make_unique<DdpmSchedule>(alphas_cumprod)
                           : std::make_unique<DdpmSchedule>();
            break;
        case EDM_V_PRED:
            schedule = std::make_unique<EdmSchedule>();
            break;
        case FLOW_PRED:
            schedule = std::make_unique<FlowSchedule>(flow_shift);
            break;
        case FLUX_FLOW_PRED:  // FLUX.1 and FLUX.2
            schedule = std::make_unique<FluxFlowSchedule>(flow_shift);
            break;
        case SEFI_FLOW_PRED:
            fail("the sefi_flow prediction (SeFi-Image's dual-time flow) is not built yet");
        case MINIT2I_FLOW_PRED:
            fail("the minit2i_flow prediction (MiniT2I's flow) is not built yet");
        default:
            fail("unknown prediction type %d", static_cast<int>(prediction));
    }
    return std::make_unique<Denoiser>(prediction, std::move(schedule));
}

Prediction resolve_prediction(Prediction requested, Prediction model_default) {
    if (requested == PREDICTION_COUNT) return model_default;
    SD_CHECK(requested >= EPS_PRED && requested < PREDICTION_COUNT, "unknown prediction type %d",
             static_cast<int>(requested));
    return requested;
}

}  // namespace sd
