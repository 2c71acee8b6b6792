#include "sampling/spectrum.h"

#include <algorithm>
#include <cmath>

#include "sampling/condition_cache.h"

namespace sd {
namespace {

float tau_of(int count) {
    return (static_cast<float>(count) / 50.0f) * 2.0f - 1.0f;
}

// Chebyshev polynomials T_0..T_{n-1} at t.
void chebyshev(float t, float* out, int n) {
    out[0] = 1.0f;
    if (n > 1) out[1] = t;
    for (int j = 2; j < n; ++j) out[j] = 2.0f * t * out[j - 1] - out[j - 2];
}

bool cholesky(const std::vector<float>& A, std::vector<float>& L, int n) {
    std::fill(L.begin(), L.end(), 0.0f);
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j <= i; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < j; ++k) sum += L[i * n + k] * L[j * n + k];
            if (i == j) {
                const float diag = A[i * n + i] - sum;
                if (diag <= 0.0f) return false;
                L[i * n + j] = std::sqrt(diag);
            } else {
                L[i * n + j] = (A[i * n + j] - sum) / L[j * n + j];
            }
        }
    }
    return true;
}

std::vector<float> cholesky_solve(const std::vector<float>& L, const std::vector<float>& b, int n) {
    std::vector<float> y(n), x(n);
    for (int i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int j = 0; j < i; ++j) sum += L[i * n + j] * y[j];
        y[i] = (b[i] - sum) / L[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        float sum = 0.0f;
        for (int j = i + 1; j < n; ++j) sum += L[j * n + i] * x[j];
        x[i] = (y[i] - sum) / L[i * n + i];
    }
    return x;
}

}  // namespace

Spectrum::Spectrum(const SpectrumConfig& config, size_t total_steps)
    : config_(config),
      curr_ws_(static_cast<float>(config.window_size)),
      K_(std::max(config.m + 1, 6)),
      stop_step_(static_cast<int>(config.stop_percent * static_cast<float>(total_steps))) {}

bool Spectrum::should_predict() const {
    if (cnt_ < config_.warmup_steps) return false;
    if (stop_step_ > 0 && cnt_ >= stop_step_) return false;
    if (history_.size() < 2) return false;
    const int ws = std::max(1, static_cast<int>(std::floor(curr_ws_)));
    return (num_cached_ + 1) % ws != 0;
}

void Spectrum::update(const Tensor& denoised) {
    history_.push_back(cache_math::values(denoised));
    taus_.push_back(tau_of(cnt_));
    while (static_cast<int>(history_.size()) > K_) {
        history_.erase(history_.begin());
        taus_.erase(taus_.begin());
    }
    if (cnt_ >= config_.warmup_steps) curr_ws_ += config_.flex_window;
    num_cached_ = 0;
    ++cnt_;
}

// Ridge regression weights: X (X^T X + lam I)^-1 x*, X the Chebyshev basis at the history's
// taus, x* the basis at this call's tau.
std::vector<float> Spectrum::fit_weights() const {
    const int K = static_cast<int>(history_.size()), M1 = config_.m + 1;
    std::vector<float> X(static_cast<size_t>(K) * M1), x_star(M1);
    for (int i = 0; i < K; ++i) chebyshev(taus_[i], &X[static_cast<size_t>(i) * M1], M1);
    chebyshev(tau_of(cnt_), x_star.data(), M1);
    std::vector<float> XtX(static_cast<size_t>(M1) * M1), L(XtX.size());
    for (int i = 0; i < M1; ++i) {
        for (int j = 0; j < M1; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) sum += X[k * M1 + i] * X[k * M1 + j];
            XtX[i * M1 + j] = sum + (i == j ? config_.lam : 0.0f);
        }
    }
    if (!cholesky(XtX, L, M1)) {
        float trace = 0.0f;
        for (int i = 0; i < M1; ++i) trace += XtX[i * M1 + i];
        for (int i = 0; i < M1; ++i) XtX[i * M1 + i] += 1e-4f * trace / M1;
        cholesky(XtX, L, M1);
    }
    const std::vector<float> v = cholesky_solve(L, x_star, M1);
    std::vector<float> weights(K, 0.0f);
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < M1; ++j) weights[k] += X[k * M1 + j] * v[j];
    return weights;
}

Tensor Spectrum::predict(const Shape& shape) {
    const std::vector<float> weights = fit_weights();
    const std::vector<float>& last = history_.back();
    const std::vector<float>& prev = history_[history_.size() - 2];
    const float w_cheb = config_.w, w_taylor = 1.0f - config_.w;
    Tensor out = Tensor::zeros(shape);
    float* o = out.data<float>();
    const size_t n = std::min(last.size(), static_cast<size_t>(out.numel()));
    for (size_t f = 0; f < n; ++f) {
        float cheb = 0.0f;
        for (size_t k = 0; k < history_.size(); ++k) cheb += weights[k] * history_[k][f];
        const float taylor = last[f] + 0.5f * (last[f] - prev[f]);
        o[f] = w_taylor * taylor + w_cheb * cheb;
    }
    ++num_cached_;
    ++skipped_;
    ++cnt_;
    return out;
}

}  // namespace sd
