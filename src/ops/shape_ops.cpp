// Copies between strided views (concat, permute_copy), nearest 2x upsampling, constant
// 2-d padding and the sinusoidal timestep embedding. All memory-bound: runs along the
// merged innermost dimension are memcpy'd; a copy whose source is unit-stride along
// another dimension (a transpose) goes tile by tile so reads and writes both stay in cache.
#include "ops/shape_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/device_ops.h"
#include "ops/cpu/strided_iter.h"

namespace sd {
namespace {

constexpr int64_t kTile = 32;

// dst[...] = src[...] for the coalesced dims of `it` where the source is unit-stride along
// dim p (not the innermost one): kTile x kTile tiles of (p, innermost) per outer index.
template <class T>
void copy_transposed(const cpu::StridedIter<2>& it, int p, T* dst, const T* src) {
    const int last = it.ndim() - 1;
    Shape outer;
    Strides od, os;
    for (int d = 0; d < last; ++d) {
        if (d == p) continue;
        outer.push_back(it.size(d));
        od.push_back(it.stride(0, d));
        os.push_back(it.stride(1, d));
    }
    const int64_t np = it.size(p), nl = it.inner_size();
    const int64_t dp = it.stride(0, p), dl = it.stride(0, last), sl = it.stride(1, last);
    const int64_t ptiles = (np + kTile - 1) / kTile;
    parallel_for(outer.numel() * ptiles, std::max<int64_t>(1, cpu::kGrainMemory / (kTile * nl)),
                 [&](int64_t t0, int64_t t1) {
                     for (int64_t t = t0; t < t1; ++t) {
                         const int64_t o = t / ptiles, p0 = (t % ptiles) * kTile,
                                       p1 = std::min(np, p0 + kTile);
                         T* d = dst + cpu::strided_offset(outer, od, o);
                         const T* s = src + cpu::strided_offset(outer, os, o);
                         for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
                             const int64_t l1 = std::min(nl, l0 + kTile);
                             for (int64_t i = p0; i < p1; ++i) {
                                 for (int64_t l = l0; l < l1; ++l)
                                     d[i * dp + l * dl] = s[i + l * sl];
                             }
                         }
                     }
                 });
}

// Copies src into dst, views of one shape and element size, any strides.
template <class T>
void copy_view(const Tensor& dst, const Tensor& src) {
    auto* d = static_cast<T*>(dst.data_ptr());
    const auto* s = static_cast<const T*>(src.data_ptr());
    cpu::StridedIter<2> it(dst.shape(), {&dst.strides(), &src.strides()});
    const int64_t ds = it.inner_stride(0), ss = it.inner_stride(1);
    if (ss != 1) {
        for (int p = 0; p + 1 < it.ndim(); ++p) {
            if (it.stride(1, p) == 1) return copy_transposed<T>(it, p, d, s);
        }
    }
    parallel_for(it.numel(), cpu::kGrainMemory, [&](int64_t b, int64_t e) {
        it.for_each_run(b, e, [&](const int64_t* off, int64_t len) {
            T* o = d + off[0];
            const T* i = s + off[1];
            if (ds == 1 && ss == 1) {
                std::memcpy(o, i, static_cast<size_t>(len) * sizeof(T));
            } else {
                for (int64_t j = 0; j < len; ++j) o[j * ds] = i[j * ss];
            }
        });
    });
}

void copy_any(const Tensor& dst, const Tensor& src) {
    if (dst.numel() == 0) return;
    switch (dtype_info(dst.dtype()).type_size) {
        case 4:
            return copy_view<uint32_t>(dst, src);
        case 2:
            return copy_view<uint16_t>(dst, src);
        default:
            fail("copy of %s: unsupported element size", dst.describe().c_str());
    }
}

void check_plain(const Tensor& t, const char* op) {
    SD_CHECK(t.defined(), "%s: undefined tensor", op);
    SD_CHECK(!is_quantized(t.dtype()), "%s: %s is block-quantized; dequantize it first", op,
             t.describe().c_str());
}

void check_image(const Tensor& x, const char* op) {
    cpu::require_f32(x, op, "x");
    SD_CHECK(x.dim() >= 2, "%s: x %s must be [..., H, W]", op, x.describe().c_str());
}

// Output row of the widened input row: o[2j] = o[2j + 1] = s[j * step].
template <bool Unit>
void widen_row(const float* s, int64_t step, int64_t w, float* o) {
    for (int64_t j = 0; j < w; ++j) {
        const float v = s[Unit ? j : j * step];
        o[2 * j] = v;
        o[2 * j + 1] = v;
    }
}

}  // namespace

void copy_into(const Tensor& src, const Tensor& dst) {
    if (on_device::any({&src, &dst})) [[unlikely]]
        return on_device::copy_into(src, dst);
    cpu::require_f32(src, "copy_into", "src");
    cpu::require_output(dst, src.shape(), "copy_into");
    const Tensor s = cpu::readable_beside(src, dst, "copy_into");
    if (s.data_ptr() == dst.data_ptr()) return;
    const float* from = s.data<float>();
    float* to = dst.data<float>();
    parallel_for(dst.numel(), cpu::kGrainMemory, [&](int64_t begin, int64_t end) {
        std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin) * sizeof(float));
    });
}

Tensor concat(const std::vector<Tensor>& tensors, int dim) {
    if (!tensors.empty() && on_device::any({&tensors[0]})) [[unlikely]]
        return on_device::concat(tensors, dim);
    SD_CHECK(!tensors.empty(), "concat: no tensors");
    const Tensor& first = tensors[0];
    check_plain(first, "concat");
    const int d = first.wrap_dim(dim);
    Shape shape = first.shape();
    shape[d] = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        check_plain(t, "concat");
        SD_CHECK(t.dtype() == first.dtype() && t.dim() == first.dim(),
                 "concat: tensor %zu is %s but tensor 0 is %s", i, t.describe().c_str(),
                 first.describe().c_str());
        for (int j = 0; j < t.dim(); ++j) {
            SD_CHECK(j == d || t.size(j) == first.size(j),
                     "concat along dim %d: tensor %zu is %s but tensor 0 is %s (dimension %d)", d,
                     i, t.describe().c_str(), first.describe().c_str(), j);
        }
        shape[d] += t.size(d);
    }
    Tensor out = Tensor::empty(shape, first.dtype());
    int64_t at = 0;
    for (const Tensor& t : tensors) {
        copy_any(out.narrow(d, at, t.size(d)), t);
        at += t.size(d);
    }
    return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim) {
    SD_CHECK(x.defined(), "chunk: undefined tensor");
    SD_CHECK(chunks > 0, "chunk of %s into %lld chunks: the count must be positive",
             x.describe().c_str(), static_cast<long long>(chunks));
    const int d = x.wrap_dim(dim);
    const int64_t size = x.size(d);
    // torch.chunk: pieces of ceil(size / chunks), so there may be fewer than `chunks`; an
    // empty dimension gives `chunks` empty pieces.
    if (size == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), x.narrow(d, 0, 0));
    const int64_t step = (size + chunks - 1) / chunks;
    std::vector<Tensor> out;
    for (int64_t start = 0; start < size; start += step) {
        out.push_back(x.narrow(d, start, std::min(step, size - start)));
    }
    return out;
}

Tensor permute_copy(const Tensor& x, const std::vector<int>& order) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::permute_copy(x, order);
    SD_CHECK(x.defined(), "permute_copy: undefined tensor");
    const Tensor v = x.permute(order);
    if (is_quantized(x.dtype())) return v.clone();  // whole rows: the tensor layer copies them
    Tensor out = Tensor::empty(v.shape(), v.dtype());
    copy_any(out, v);
    return out;
}

Tensor upsample_nearest2x(const Tensor& x) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::upsample_nearest2x(x);
    check_image(x, "upsample_nearest2x");
    const int64_t h = x.size(-2), w = x.size(-1);
    Shape shape = x.shape();
    shape[shape.size() - 2] = 2 * h;
    shape[shape.size() - 1] = 2 * w;
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const auto* src = static_cast<const float*>(x.data_ptr());
    float* dst = out.data<float>();
    const int64_t step = x.stride(-1);
    parallel_for(x.numel() / w, std::max<int64_t>(1, cpu::kGrainMemory / (4 * w)),
                 [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                         const float* s = src + cpu::strided_offset(x.shape(), x.strides(), r * w);
                         float* o = dst + r * 4 * w;  // input row r -> output rows 2r, 2r + 1
                         if (step == 1) {
                             widen_row<true>(s, step, w, o);
                         } else {
                             widen_row<false>(s, step, w, o);
                         }
                         std::memcpy(o + 2 * w, o, static_cast<size_t>(2 * w) * sizeof(float));
                     }
                 });
    return out;
}

Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value) {
    if (on_device::any({&x})) [[unlikely]]
        return on_device::pad2d(x, left, right, top, bottom, value);
    check_image(x, "pad2d");
    const int64_t h = x.size(-2), w = x.size(-1);
    const int64_t ho = h + top + bottom, wo = w + left + right;
    SD_CHECK(ho >= 0 && wo >= 0,
             "pad2d of %s by (left %lld, right %lld, top %lld, bottom %lld): negative output size",
             x.describe().c_str(), static_cast<long long>(left), static_cast<long long>(right),
             static_cast<long long>(top), static_cast<long long>(bottom));
    Shape shape = x.shape();
    shape[shape.size() - 2] = ho;
    shape[shape.size() - 1] = wo;
    Tensor out = Tensor::empty(shape);
    if (out.numel() == 0) return out;
    const auto* src = static_cast<const float*>(x.data_ptr());
    float* dst = out.data<float>();
    const int64_t step = x.stride(-1);
    // Output columns [j0, j1) come from input columns [j0 - left, j1 - left).
    const int64_t j0 = std::clamp<int64_t>(left, 0, wo);
    const int64_t j1 = std::max(j0, std::min(wo, w + left));
    parallel_for(out.numel() / wo, std::max<int64_t>(1, cpu::kGrainMemory / wo),
                 [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                         float* o = dst + r * wo;
                         const int64_t hi = r % ho - top;
                         if (hi < 0 || hi >= h || j1 == j0) {
                             std::fill(o, o + wo, value);
                             continue;
                         }
                         const int64_t in_row = (r / ho) * h + hi;
                         const float* s =
                             src + cpu::strided_offset(x.shape(), x.strides(), in_row * w);
                         std::fill(o, o + j0, value);
                         cpu::gather_strided(s + (j0 - left) * step, step, j1 - j0, o + j0);
                         std::fill(o + j1, o + wo, value);
                     }
                 });
    return out;
}

Tensor timestep_embedding(const Tensor& timesteps, int64_t dim, float max_period,
                          bool flip_sin_to_cos) {
    if (on_device::any({&timesteps})) [[unlikely]]
        return on_device::run_on_host(
            "timestep_embedding", {timesteps}, [&](const std::vector<Tensor>& h) {
                return timestep_embedding(h[0], dim, max_period, flip_sin_to_cos);
            });
    cpu::require_f32(timesteps, "timestep_embedding", "timesteps");
    SD_CHECK(timesteps.dim() == 1, "timestep_embedding: timesteps %s must be [N]",
             timesteps.describe().c_str());
    SD_CHECK(dim > 0, "timestep_embedding: dim %lld must be positive", static_cast<long long>(dim));
    const int64_t n = timesteps.size(0), half = dim / 2;
    // f32 steps as torch: exp(fl(-ln(max_period) * i) / half), then t * f, then cos / sin.
    // The exp is rounded once from double so the argument t * f is the reference's exactly.
    const float c = static_cast<float>(-std::log(static_cast<double>(max_period)));
    std::vector<float> freqs(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
        const float e = c * static_cast<float>(i) / static_cast<float>(half);
        freqs[static_cast<size_t>(i)] = static_cast<float>(std::exp(static_cast<double>(e)));
    }
    Tensor out = Tensor::zeros({n, dim});
    const auto* t = static_cast<const float*>(timesteps.data_ptr());
    float* dst = out.data<float>();
    const int64_t cos_at = flip_sin_to_cos ? 0 : half, sin_at = flip_sin_to_cos ? half : 0;
    parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(half, 1)),
                 [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                         float* row = dst + r * dim;
                         const float tv = t[r * timesteps.stride(0)];
                         for (int64_t i = 0; i < half; ++i) {
                             const float arg = tv * freqs[static_cast<size_t>(i)];
                             row[cos_at + i] = std::cos(arg);
                             row[sin_at + i] = std::sin(arg);
                         }
                     }
                 });
    return out;
}

}  // namespace sd
