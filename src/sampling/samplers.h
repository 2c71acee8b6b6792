// Samplers: integrate from noise to a clean latent through a list of sigmas, step for step as
// stable-diffusion.cpp's sample_k_diffusion (k-diffusion sampling.py and the ComfyUI / paper
// samplers it ports). A sampler knows nothing about networks: it calls a denoise callback that
// returns the denoised (x0) prediction for a latent at a noise level.
#pragma once

#include <cmath>
#include <functional>
#include <vector>

#include "base/cancel.h"
#include "base/error.h"
#include "sampling/rng.h"
#include "stable-diffusion.h"
#include "tensor/tensor.h"

namespace sd {

using SampleMethod = sample_method_t;

constexpr int kMaxLmsOrder = 8;

// What one model evaluation is asked for.
struct DenoiseCall {
    float sigma;       // noise level of x
    int step;          // 1-based sampler step; negative for an evaluation that is not the last
                       // of its step (the first of heun's two calls), as the reference numbers them
    bool need_uncond;  // cfg_pp samplers also need the unconditional prediction
};

// The callback's answer: the guided x0 prediction and, when asked for, the unconditional one.
// Both f32 with x's shape.
struct Denoised {
    Tensor pred;
    Tensor pred_uncond;
};

// x -> x0 prediction: the pipeline runs the network (with CFG) and the denoiser here.
using DenoiseFn = std::function<Denoised(const Tensor& x, const DenoiseCall& call)>;

// Reported after every sampler step.
struct StepInfo {
    int step;                // 1-based
    int steps;               // total
    float sigma;             // the step's starting noise level
    const Tensor& x;         // the latent after the step
    const Tensor& denoised;  // the step's first x0 prediction
};

// Progress and cancellation: return false to stop; sample() then throws sd::Cancelled.
using StepFn = std::function<bool(const StepInfo& info)>;

struct SamplerOptions {
    // `--eta`: the noise of ancestral / SDE steps (and TCD's gamma). INFINITY picks the
    // method's default (default_eta); negative values are an error.
    float eta = INFINITY;
    // The model is a rectified-flow model (Denoiser::is_flow): ancestral steps renoise in the
    // flow parametrisation.
    bool is_flow = false;
    // euler_ge's gamma (extra sample arg "gamma").
    float ge_gamma = 2.0f;
    // lms: how many previous derivatives a step may use (k-diffusion's order), 1..kMaxLmsOrder.
    int lms_order = 4;
    StepFn on_step;
};

// Samples from x (already scaled to sigmas[0], see Denoiser::noise_scaling) down to
// sigmas.back(). noise_rng is the sampler generator (`--sampler-rng`) for the methods that
// add noise. Throws sd::Error on an unknown method, sigmas that are not a non-increasing list
// of at least 2 finite values >= 0 with sigmas[0] > 0, a negative eta, a non-f32 x, or a
// callback result of the wrong shape; sd::Cancelled when on_step returns false.
Tensor sample(SampleMethod method, const DenoiseFn& denoise, Tensor x,
              const std::vector<float>& sigmas, Rng& noise_rng, const SamplerOptions& options = {});

// The eta a method uses when none is given (resolve_eta of the reference): 1 for euler_a,
// dpm++2s_a, er_sde, euler_a_cfg_pp, dpm++2m_sde and dpm++2m_sde_bt, 0 otherwise.
float default_eta(SampleMethod method);
// eta, or default_eta(method) for INFINITY. Throws sd::Error for negative or NaN eta.
float resolve_eta(SampleMethod method, float eta);

// Whether the method's callback must also return the unconditional prediction (cfg_pp).
bool needs_uncond(SampleMethod method);

// `--sigmas`: a user's sigma list, checked: at least 2 finite values, strictly decreasing,
// the last >= 0. Throws sd::Error naming the first bad value.
std::vector<float> custom_sigmas(const float* values, int count);

}  // namespace sd
