#include "sampling/cache_params.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/error.h"

namespace sd {

const char* cache_mode_name(CacheMode mode) {
    switch (mode) {
        case CacheMode::EasyCache:
            return "easycache";
        case CacheMode::UCache:
            return "ucache";
        case CacheMode::DbCache:
            return "dbcache";
        case CacheMode::TaylorSeer:
            return "taylorseer";
        case CacheMode::CacheDit:
            return "cache-dit";
        case CacheMode::Spectrum:
            return "spectrum";
        case CacheMode::None:
            break;
    }
    return "disabled";
}

bool cache_mode_applies(CacheMode mode, CacheTarget target) {
    switch (mode) {
        case CacheMode::None:
            return true;
        case CacheMode::UCache:
            return target == CacheTarget::UNet;
        case CacheMode::Spectrum:
            return target != CacheTarget::Unknown;
        default:
            return target == CacheTarget::DiT;
    }
}

std::vector<int> parse_scm_mask(const std::string& text) {
    std::vector<int> mask;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        errno = 0;
        const long v = std::strtol(item.c_str(), &end, 10);
        SD_CHECK(!item.empty() && *end == '\0' && errno == 0 && v >= -1000000 && v <= 1000000,
                 "scm_mask: '%s' is not an integer (expected comma-separated 0/1)", item.c_str());
        mask.push_back(static_cast<int>(v));
    }
    return mask;
}

void check_step_cache_params(const StepCacheParams& p) {
    if (p.mode == CacheMode::EasyCache || p.mode == CacheMode::UCache) {
        SD_CHECK(!(p.reuse_threshold < 0.0f), "cache option threshold %g must not be negative",
                 p.reuse_threshold);
        SD_CHECK(p.start_percent >= 0.0f && p.start_percent < 1.0f && p.end_percent > 0.0f &&
                     p.end_percent <= 1.0f && p.start_percent < p.end_percent,
                 "cache options start %g and end %g must satisfy 0 <= start < end <= 1",
                 p.start_percent, p.end_percent);
    }
    // Sizes of the forecasts' tables: the reference takes any, we refuse what cannot run.
    SD_CHECK(p.spectrum_m >= 0 && p.spectrum_m <= 64, "cache option m %d is outside [0, 64]",
             p.spectrum_m);
    SD_CHECK(p.taylorseer_n_derivatives >= 0 && p.taylorseer_n_derivatives <= 16,
             "taylorseer_n_derivatives %d is outside [0, 16]", p.taylorseer_n_derivatives);
    SD_CHECK(std::isfinite(p.spectrum_flex_window) && std::isfinite(p.spectrum_w),
             "cache options w and flex must be numbers");
}

}  // namespace sd
