#include "sampling/step_cache.h"

#include <algorithm>

#include "base/error.h"
#include "base/log.h"
#include "sampling/dbcache.h"
#include "sampling/easycache.h"
#include "sampling/ucache.h"

namespace sd {
namespace {

const char* target_hint(CacheMode mode) {
    switch (mode) {
        case CacheMode::UCache:
            return "it caches UNet models (SD 1.x, SD 2.x, SDXL)";
        case CacheMode::Spectrum:
            return "it runs on UNet and DiT models";
        default:
            return "it caches DiT models (FLUX, SD3, ...)";
    }
}

float reuse_threshold(const StepCacheParams& p) {
    float t = p.reuse_threshold;
    if (t == INFINITY) t = p.mode == CacheMode::EasyCache ? 0.2f : 1.0f;
    return std::max(0.0f, t);
}

std::unique_ptr<ConditionCache> make_condition_cache(const StepCacheParams& p,
                                                     const NoiseSchedule& schedule,
                                                     const std::vector<float>& sigmas) {
    switch (p.mode) {
        case CacheMode::EasyCache:
            return std::make_unique<EasyCache>(
                EasyCacheConfig{reuse_threshold(p), p.start_percent, p.end_percent}, schedule);
        case CacheMode::UCache:
            return std::make_unique<UCache>(
                UCacheConfig{reuse_threshold(p), p.start_percent, p.end_percent, p.error_decay_rate,
                             p.use_relative_threshold, p.reset_error_on_compute},
                sigmas);
        case CacheMode::DbCache:
        case CacheMode::TaylorSeer:
        case CacheMode::CacheDit:
            return std::make_unique<DbCache>(
                DbCacheConfig{p.Fn_compute_blocks, p.Bn_compute_blocks, p.residual_diff_threshold,
                              p.max_warmup_steps},
                sigmas);
        default:
            return nullptr;
    }
}

// The reference's names in its log lines.
const char* log_name(CacheMode mode) {
    switch (mode) {
        case CacheMode::EasyCache:
            return "EasyCache";
        case CacheMode::UCache:
            return "UCache";
        case CacheMode::Spectrum:
            return "Spectrum";
        default:
            return "CacheDIT";
    }
}

// The reference's line when a run's cache starts.
void log_enabled(const StepCacheParams& p) {
    switch (p.mode) {
        case CacheMode::EasyCache:
            SD_LOG_INFO("EasyCache enabled - threshold: %.3f, start: %.2f, end: %.2f",
                        reuse_threshold(p), p.start_percent, p.end_percent);
            break;
        case CacheMode::UCache:
            SD_LOG_INFO(
                "UCache enabled - threshold: %.3f, start: %.2f, end: %.2f, decay: %.2f, "
                "relative: %s, reset: %s",
                reuse_threshold(p), p.start_percent, p.end_percent,
                std::max(0.0f, std::min(1.0f, p.error_decay_rate)),
                p.use_relative_threshold ? "true" : "false",
                p.reset_error_on_compute ? "true" : "false");
            break;
        case CacheMode::Spectrum:
            SD_LOG_INFO(
                "Spectrum enabled - w: %.2f, m: %d, lam: %.2f, window: %d, flex: %.2f, "
                "warmup: %d, stop: %.0f%%",
                p.spectrum_w, p.spectrum_m, p.spectrum_lam, p.spectrum_window_size,
                p.spectrum_flex_window, p.spectrum_warmup_steps, p.spectrum_stop_percent * 100.0f);
            break;
        case CacheMode::None:
            break;
        default:
            SD_LOG_INFO("CacheDIT enabled - mode: %s, Fn: %d, Bn: %d, threshold: %.3f, warmup: %d",
                        p.mode == CacheMode::CacheDit  ? "DBCache+TaylorSeer"
                        : p.mode == CacheMode::DbCache ? "DBCache"
                                                       : "TaylorSeer",
                        p.Fn_compute_blocks, p.Bn_compute_blocks, p.residual_diff_threshold,
                        p.max_warmup_steps);
    }
}

}  // namespace

void check_step_cache(const StepCacheParams& params, CacheTarget target,
                      const std::string& family) {
    if (params.mode == CacheMode::None) return;
    SD_CHECK(cache_mode_applies(params.mode, target),
             "--cache-mode %s does not apply to %s models: %s", cache_mode_name(params.mode),
             family.c_str(), target_hint(params.mode));
    check_step_cache_params(params);
}

StepCache::StepCache(const StepCacheParams& params, const NoiseSchedule& schedule,
                     const std::vector<float>& sigmas)
    : params_(params), total_steps_(sigmas.empty() ? 0 : sigmas.size() - 1) {
    log_enabled(params);
    if (params.mode == CacheMode::Spectrum) {
        spectrum_ = std::make_unique<Spectrum>(
            SpectrumConfig{params.spectrum_w, params.spectrum_m, params.spectrum_lam,
                           params.spectrum_window_size, params.spectrum_flex_window,
                           params.spectrum_warmup_steps, params.spectrum_stop_percent},
            total_steps_);
    } else if (params.mode != CacheMode::None && sigmas.size() >= 2) {
        condition_ = make_condition_cache(params, schedule, sigmas);
    }
}

StepCache::~StepCache() = default;

void StepCache::begin_call(int step, float sigma) {
    step_ = step;
    forecast_ = spectrum_ && spectrum_->should_predict();
    if (condition_ && step > 0) condition_->begin_step(step - 1, sigma);
}

bool StepCache::should_forecast() const {
    return forecast_;
}

Tensor StepCache::forecast(const Shape& shape) {
    return spectrum_->predict(shape);
}

bool StepCache::before_condition(const void* cond, const Tensor& input, Tensor* output) {
    return condition_ && step_ > 0 && condition_->before_condition(cond, input, output);
}

void StepCache::after_condition(const void* cond, const Tensor& input, const Tensor& output) {
    if (condition_ && step_ > 0) condition_->after_condition(cond, input, output);
}

bool StepCache::step_skipped() const {
    return condition_ && step_ > 0 && condition_->step_skipped();
}

void StepCache::end_call(const Tensor& denoised) {
    if (params_.mode == CacheMode::None) return;
    if (spectrum_ && !forecast_) spectrum_->update(denoised);
    if (step_ <= 0) return;
    const size_t index = static_cast<size_t>(step_ - 1);
    if (decisions_.size() <= index) decisions_.resize(index + 1, StepDecision::Computed);
    decisions_[index] = forecast_        ? StepDecision::Forecast
                        : step_skipped() ? StepDecision::Reused
                                         : StepDecision::Computed;
}

std::string StepCache::decision_string() const {
    std::string s;
    for (StepDecision d : decisions_) s += static_cast<char>(d);
    return s;
}

void StepCache::log_summary() const {
    if (params_.mode == CacheMode::None) return;
    const int skipped =
        spectrum_ ? spectrum_->steps_skipped() : (condition_ ? condition_->steps_skipped() : 0);
    const char* name = log_name(params_.mode);
    const size_t total = total_steps_;
    if (skipped > 0 && static_cast<size_t>(skipped) < total) {
        SD_LOG_INFO("%s skipped %d/%zu steps (%.2fx estimated speedup)", name, skipped, total,
                    static_cast<double>(total) / static_cast<double>(total - skipped));
    } else if (skipped > 0) {
        SD_LOG_INFO("%s skipped %d/%zu steps", name, skipped, total);
    } else if (!spectrum_) {
        SD_LOG_INFO("%s completed without skipping steps", name);
    }
    const auto count = [&](StepDecision d) {
        return static_cast<int>(std::count(decisions_.begin(), decisions_.end(), d));
    };
    SD_LOG_INFO(
        "%s steps: %d computed, %d reused, %d forecast: %s (C computed, R reused, F "
        "forecast)",
        cache_mode_name(params_.mode), count(StepDecision::Computed), count(StepDecision::Reused),
        count(StepDecision::Forecast), decision_string().c_str());
}

}  // namespace sd
