// Group and layer normalisation. Statistics come block by block from the vector kernel
// (two passes over an L1-sized block: sum, then squared deviations from the block mean)
// and blocks combine in double with Chan's formula, so large means lose no precision and
// the data is read from memory once for the statistics and once for the apply pass.
#include "ops/norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/device_ops.h"
#include "ops/cpu/pointwise_kernels.h"
#include "ops/cpu/strided_iter.h"

namespace sd {
namespace {

// Count, mean and sum of squared deviations from the mean.
struct Moments {
    double n = 0, mean = 0, m2 = 0;
};

Moments combine(const Moments& a, const Moments& b) {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    Moments r;
    r.n = a.n + b.n;
    const double delta = b.mean - a.mean;
    r.mean = a.mean + delta * (b.n / r.n);
    r.m2 = a.m2 + b.m2 + delta * delta * (a.n * b.n / r.n);
    return r;
}

Moments moments(const cpu::PointwiseKernels& k, const float* x, int64_t n) {
    Moments m;
    for (int64_t i = 0; i < n; i += cpu::kStatsBlock) {
        const int64_t len = std::min(cpu::kStatsBlock, n - i);
        double sum = 0, m2 = 0;
        k.block_stats(x + i, len, &sum, &m2);
        m = combine(m, {static_cast<double>(len), sum / static_cast<double>(len), m2});
    }
    return m;
}

float rstd_of(const Moments& m, float eps) {
    const double var = m.n > 0 ? m.m2 / m.n : 0.0;
    return static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

// weight / bias: undefined, or f32 [c]; returns a packed pointer or null.
const float* affine_param(const Tensor& p, int64_t c, const char* op, const char* arg,
                          const Tensor& x, Tensor* keep) {
    if (!p.defined()) return nullptr;
    cpu::require_f32(p, op, arg);
    SD_CHECK(p.dim() == 1 && p.size(0) == c, "%s: %s %s does not match x %s (want [%lld])", op, arg,
             p.describe().c_str(), x.describe().c_str(), static_cast<long long>(c));
    *keep = p.contiguous();
    return keep->data<float>();
}

struct GroupNormPlan {
    const float* x;
    float* y;
    const float* w;
    const float* b;
    int64_t batch, channels, groups, spatial;
    float eps;
    bool silu;

    int64_t group_len() const { return channels / groups * spatial; }

    // Normalises channels [c0, c1) of sample bi, positions [s0, s1), with the group's stats.
    void apply(const cpu::PointwiseKernels& k, int64_t bi, int64_t c0, int64_t c1, int64_t s0,
               int64_t s1, const Moments& m) const {
        const float rstd = rstd_of(m, eps);
        const cpu::SplitMean mean = cpu::SplitMean::of(m.mean);
        for (int64_t c = c0; c < c1; ++c) {
            const float scale = w ? rstd * w[c] : rstd;
            const float shift = b ? b[c] : 0.0f;
            const int64_t off = (bi * channels + c) * spatial + s0;
            k.norm_apply[silu ? 1 : 0](x + off, y + off, s1 - s0, mean, scale, shift);
        }
    }

    // One task a (sample, group): statistics and apply while the group is in cache.
    void run_fused(const cpu::PointwiseKernels& k) const {
        const int64_t cpg = channels / groups;
        parallel_for(groups * batch, 1, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t bi = t / groups, g = t % groups;
                const Moments m = moments(k, x + t * group_len(), group_len());
                apply(k, bi, g * cpg, (g + 1) * cpg, 0, spatial, m);
            }
        });
    }

    // Fewer groups than threads: statistics of pieces of every group in parallel, then the
    // apply pass over pieces of every channel plane.
    void run_split(const cpu::PointwiseKernels& k) const {
        constexpr int64_t kPiece = 16 * cpu::kStatsBlock;
        const int64_t ng = groups * batch, len = group_len();
        const int64_t pieces = (len + kPiece - 1) / kPiece;
        std::vector<Moments> part(static_cast<size_t>(ng * pieces));
        parallel_for(ng * pieces, 1, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t start = (t % pieces) * kPiece;
                const float* base = x + (t / pieces) * len + start;
                part[static_cast<size_t>(t)] = moments(k, base, std::min(kPiece, len - start));
            }
        });
        std::vector<Moments> stats(static_cast<size_t>(ng));
        for (int64_t t = 0; t < ng * pieces; ++t) {
            Moments& s = stats[static_cast<size_t>(t / pieces)];
            s = combine(s, part[static_cast<size_t>(t)]);
        }
        const int64_t cpg = channels / groups;
        const int64_t plane_pieces = (spatial + kPiece - 1) / kPiece;
        parallel_for(batch * channels * plane_pieces, 1, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t plane = t / plane_pieces, s0 = (t % plane_pieces) * kPiece;
                const int64_t bi = plane / channels, c = plane % channels;
                const Moments& m = stats[static_cast<size_t>(bi * groups + c / cpg)];
                apply(k, bi, c, c + 1, s0, std::min(spatial, s0 + kPiece), m);
            }
        });
    }
};

}  // namespace

namespace {

// x normalised into out (which may be x itself).
Tensor group_norm_into(const Tensor& x, Tensor out, int64_t groups, const Tensor& weight,
                       const Tensor& bias, float eps, bool silu) {
    cpu::require_f32(x, "group_norm", "x");
    SD_CHECK(x.dim() >= 2, "group_norm: x %s must be [B, C, ...]", x.describe().c_str());
    const int64_t channels = x.size(1);
    SD_CHECK(groups > 0 && channels % groups == 0,
             "group_norm: %lld groups do not divide the %lld channels of x %s",
             static_cast<long long>(groups), static_cast<long long>(channels),
             x.describe().c_str());
    Tensor wkeep, bkeep;
    const float* w = affine_param(weight, channels, "group_norm", "weight", x, &wkeep);
    const float* b = affine_param(bias, channels, "group_norm", "bias", x, &bkeep);
    if (!out.defined()) out = Tensor::empty(x.shape());
    if (out.numel() == 0) return out;
    const Tensor xc = x.contiguous();
    const int64_t batch = x.size(0);
    const GroupNormPlan plan{xc.data<float>(),
                             out.data<float>(),
                             w,
                             b,
                             batch,
                             channels,
                             groups,
                             x.numel() / (batch * channels),
                             eps,
                             silu};
    const cpu::PointwiseKernels& k = cpu::pointwise_kernels();
    if (batch * groups >= num_threads()) {
        plan.run_fused(k);
    } else {
        plan.run_split(k);
    }
    return out;
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps, bool silu) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::group_norm(x, groups, weight, bias, eps, silu);
    return group_norm_into(x, Tensor(), groups, weight, bias, eps, silu);
}

Tensor group_norm(Tensor&& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps,
                  bool silu) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::group_norm(x, groups, weight, bias, eps, silu);
    const bool reuse = x.defined() && x.dtype() == DType::F32 && x.is_contiguous() &&
                       x.storage().use_count() == 1 && x.storage()->writable();
    const Tensor input = std::move(x);
    return group_norm_into(input, reuse ? input : Tensor(), groups, weight, bias, eps, silu);
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::layer_norm(x, weight, bias, eps);
    cpu::require_f32(x, "layer_norm", "x");
    SD_CHECK(x.dim() >= 1, "layer_norm: x %s has no dimension to normalise", x.describe().c_str());
    const int64_t n = x.size(-1);
    Tensor wkeep, bkeep;
    const float* w = affine_param(weight, n, "layer_norm", "weight", x, &wkeep);
    const float* b = affine_param(bias, n, "layer_norm", "bias", x, &bkeep);
    Tensor out = Tensor::empty(x.shape());
    if (out.numel() == 0) return out;
    const Tensor xs = x.stride(-1) == 1 ? x : x.contiguous();
    const auto* src = static_cast<const float*>(xs.data_ptr());
    float* dst = out.data<float>();
    const cpu::PointwiseKernels& k = cpu::pointwise_kernels();
    parallel_for(
        out.numel() / n, std::max<int64_t>(1, cpu::kGrainMemory / n), [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = src + cpu::strided_offset(xs.shape(), xs.strides(), r * n);
                const Moments m = moments(k, row, n);
                k.layer_norm_apply(row, dst + r * n, n, cpu::SplitMean::of(m.mean), rstd_of(m, eps),
                                   w, b);
            }
        });
    return out;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::rms_norm(x, weight, eps);
    cpu::require_f32(x, "rms_norm", "x");
    SD_CHECK(x.dim() >= 1, "rms_norm: x %s has no dimension to normalise", x.describe().c_str());
    const int64_t n = x.size(-1);
    Tensor wkeep;
    const float* w = affine_param(weight, n, "rms_norm", "weight", x, &wkeep);
    Tensor out = Tensor::empty(x.shape());
    if (out.numel() == 0) return out;
    const Tensor xs = x.stride(-1) == 1 ? x : x.contiguous();
    const auto* src = static_cast<const float*>(xs.data_ptr());
    float* dst = out.data<float>();
    parallel_for(
        out.numel() / n, std::max<int64_t>(1, cpu::kGrainMemory / n), [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* row = src + cpu::strided_offset(xs.shape(), xs.strides(), r * n);
                float* o = dst + r * n;
                float ss = 0.0f;
                for (int64_t i = 0; i < n; ++i) ss += row[i] * row[i];
                const float rs = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
                for (int64_t i = 0; i < n; ++i) o[i] = row[i] * rs * (w ? w[i] : 1.0f);
            }
        });
    return out;
}

Tensor rms_norm_channels(const Tensor& x, const Tensor& weight, float eps, bool silu) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::run_on_host("rms_norm_channels", {x}, [&](const std::vector<Tensor>& h) {
            return rms_norm_channels(h[0], weight, eps, silu);
        });
    cpu::require_f32(x, "rms_norm_channels", "x");
    SD_CHECK(x.dim() >= 2, "rms_norm_channels: x %s has no channel dimension",
             x.describe().c_str());
    const int64_t n = x.size(0), c = x.size(1), pixels = x.numel() / std::max<int64_t>(1, n * c);
    Tensor wkeep;
    const float* w = affine_param(weight, c, "rms_norm_channels", "weight", x, &wkeep);
    Tensor out = Tensor::empty(x.shape());
    if (out.numel() == 0) return out;
    const Tensor xs = x.contiguous();
    const float* src = xs.data<float>();
    float* dst = out.data<float>();
    // Blocks of kSpan pixels of one image: the sum of squares over the channels, read a
    // channel's row of the block at a time (contiguous), then the scaled output the same way.
    constexpr int64_t kSpan = 256;
    const int64_t spans = (pixels + kSpan - 1) / kSpan;
    const cpu::UnaryFn silu_fn =
        cpu::pointwise_kernels().unary[static_cast<int>(cpu::UnaryKind::Silu)];
    parallel_for(n * spans, 1, [&](int64_t b0, int64_t b1) {
        float rs[kSpan];
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t image = b / spans, p0 = b % spans * kSpan;
            const int64_t len = std::min(kSpan, pixels - p0);
            const float* in = src + image * c * pixels + p0;
            float* o = dst + image * c * pixels + p0;
            std::fill(rs, rs + len, 0.0f);
            for (int64_t ch = 0; ch < c; ++ch) {
                const float* row = in + ch * pixels;
                for (int64_t i = 0; i < len; ++i) rs[i] += row[i] * row[i];
            }
            for (int64_t i = 0; i < len; ++i)
                rs[i] = 1.0f / std::sqrt(rs[i] / static_cast<float>(c) + eps);
            for (int64_t ch = 0; ch < c; ++ch) {
                const float* row = in + ch * pixels;
                float* out_row = o + ch * pixels;
                const float g = w ? w[ch] : 1.0f;
                for (int64_t i = 0; i < len; ++i) out_row[i] = row[i] * rs[i] * g;
                if (silu) silu_fn(out_row, out_row, len);  // the silu op's kernel, in place
            }
        }
    });
    return out;
}

}  // namespace sd
