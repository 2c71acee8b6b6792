#include "adapters/lora_math.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/ops.h"
#include "tensor/quant.h"

namespace sd {
namespace {

// t as a matrix of its first dim by the rest.
Tensor mat(const Tensor& t) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    return t.contiguous().view({rows, t.numel() / rows});
}

float scalar(const Tensor& t) {
    return t.contiguous().to_vector().at(0);
}

// Tucker form: up [out, i], core [i, j, kh, kw], down [j, in] -> [out, in, kh, kw].
Tensor tucker(const Tensor& up, const Tensor& core, const Tensor& down) {
    SD_CHECK(core.dim() == 4 && up.size(1) == core.size(0) && core.size(1) == down.size(0),
             "Tucker factors do not fit: %s, %s, %s", up.describe().c_str(),
             core.describe().c_str(), down.describe().c_str());
    const int64_t out = up.size(0), i = core.size(0), j = core.size(1);
    const int64_t k = core.size(2) * core.size(3), in = down.size(1);
    Tensor t = matmul(up, core.contiguous().view({i, j * k})).view({out, j, k});
    Tensor u = matmul(t.permute({0, 2, 1}), down);  // [out, k, in]
    return permute_copy(u, {0, 2, 1}).view({out, in, core.size(2), core.size(3)});
}

// a @ b with a [r, out] stored transposed (LyCORIS' Tucker layout) or [out, r].
Tensor pair(const Tensor& a, const Tensor& b) {
    return matmul(mat(a), mat(b));
}

Tensor fit(Tensor d, const Shape& shape, const LoraModule& m) {
    SD_CHECK(d.numel() == shape.numel(), "LoRA module '%s' makes a change of %s for a weight of %s",
             m.key.c_str(), d.shape().to_string().c_str(), shape.to_string().c_str());
    return d.contiguous().view(shape);
}

Tensor low_rank_delta(const LoraModule& m, const Shape& shape) {
    const Tensor& up = m.part("up");
    const Tensor& down = m.part("down");
    SD_CHECK(up.dim() >= 1 && up.size(0) == shape[0],
             "LoRA module '%s': lora_up %s does not fit a weight of %s", m.key.c_str(),
             up.describe().c_str(), shape.to_string().c_str());
    if (m.has("mid")) return fit(tucker(mat(up), m.part("mid"), mat(down)), shape, m);
    return fit(matmul(mat(up), mat(down)), shape, m);
}

Tensor loha_delta(const LoraModule& m, const Shape& shape) {
    auto half = [&](const char* a, const char* b, const char* t) {
        if (!m.has(t)) return fit(pair(m.part(a), m.part(b)), shape, m);
        return fit(tucker(mat(m.part(a)).transpose(0, 1), m.part(t), mat(m.part(b))), shape, m);
    };
    Tensor w1 = half("hada_w1_a", "hada_w1_b", "hada_t1");
    Tensor w2 = half("hada_w2_a", "hada_w2_b", "hada_t2");
    float s = 1.0f;
    if (m.has("alpha"))
        s = scalar(m.part("alpha")) / static_cast<float>(m.part("hada_w1_b").size(0));
    return (w1 * w2) * s;
}

Tensor lokr_delta(const LoraModule& m, const Shape& shape) {
    Tensor w1 =
        m.has("lokr_w1") ? m.part("lokr_w1") : pair(m.part("lokr_w1_a"), m.part("lokr_w1_b"));
    SD_CHECK(w1.dim() == 2 && shape[0] % w1.size(0) == 0 && shape[1] % w1.size(1) == 0,
             "LoRA module '%s': lokr_w1 %s does not divide a weight of %s", m.key.c_str(),
             w1.describe().c_str(), shape.to_string().c_str());
    Shape w2_shape = shape;
    w2_shape[0] /= w1.size(0);
    w2_shape[1] /= w1.size(1);
    Tensor w2;
    if (m.has("lokr_w2"))
        w2 = m.part("lokr_w2");
    else if (m.has("lokr_t2"))
        w2 = tucker(mat(m.part("lokr_w2_a")).transpose(0, 1), m.part("lokr_t2"),
                    mat(m.part("lokr_w2_b")));
    else
        w2 = pair(m.part("lokr_w2_a"), m.part("lokr_w2_b"));
    w2 = fit(w2, w2_shape, m);
    int64_t rank = 1;
    if (m.has("lokr_w2_b"))
        rank = m.part("lokr_w2_b").size(0);
    else if (m.has("lokr_w1_b"))
        rank = m.part("lokr_w1_b").size(0);
    float s = 1.0f;
    if (m.has("alpha") && rank != 1) s = scalar(m.part("alpha")) / static_cast<float>(rank);
    return kron(w1, w2) * s;
}

// DoRA: (W + dW) re-scaled to the stored magnitudes, minus W.
Tensor dora_delta(const LoraModule& m, const Tensor& base, const Tensor& delta) {
    Tensor w = convert(base, DType::F32).view(delta.shape());
    Tensor calc = (w + delta).contiguous();
    const std::vector<float> mag = m.part("dora_scale").contiguous().to_vector();
    const int64_t out = delta.size(0), in = delta.size(1);
    const int64_t k = delta.numel() / (out * in);
    const bool per_row = static_cast<int64_t>(mag.size()) == out;
    SD_CHECK(per_row || static_cast<int64_t>(mag.size()) == in,
             "LoRA module '%s': dora_scale has %zu values for a weight of %s", m.key.c_str(),
             mag.size(), delta.shape().to_string().c_str());
    float* c = calc.data<float>();
    std::vector<double> norm(mag.size(), 0.0);
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)
            for (int64_t j = 0; j < k; ++j) {
                const double v = c[(o * in + i) * k + j];
                norm[static_cast<size_t>(per_row ? o : i)] += v * v;
            }
    const double eps = std::numeric_limits<float>::epsilon();
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i)
            for (int64_t j = 0; j < k; ++j) {
                const size_t at = static_cast<size_t>(per_row ? o : i);
                c[(o * in + i) * k + j] *=
                    static_cast<float>(mag[at] / (std::sqrt(norm[at]) + eps));
            }
    return calc - w;
}

}  // namespace

float lora_scale(const LoraModule& m) {
    if (m.has("scale")) return scalar(m.part("scale"));
    if (m.has("alpha")) return scalar(m.part("alpha")) / static_cast<float>(m.part("down").size(0));
    return 1.0f;
}

Tensor merge_low_rank(const Tensor& weight, const LowRankTerm& term) {
    const Tensor w = weight.contiguous();
    const int64_t rows = w.size(0), cols = w.numel() / rows;
    const Tensor down = mat(term.down), up = mat(term.up);
    const int64_t rank = down.size(0);
    SD_CHECK(!term.mid.defined() && up.size(0) == rows && up.size(1) == rank &&
                 down.size(1) == cols && cols % block_size(w.dtype()) == 0,
             "a LoRA of %s and %s cannot be merged into a weight of %s", up.describe().c_str(),
             down.describe().c_str(), w.describe().c_str());
    Tensor out = Tensor::empty(w.shape(), w.dtype());
    const size_t row_size = row_bytes(w.dtype(), cols);
    const auto* src = static_cast<const uint8_t*>(w.data_ptr());
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    const float* u = up.data<float>();
    const float* d = down.data<float>();
    parallel_for(rows, 4, [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(cols)), delta(static_cast<size_t>(cols));
        for (int64_t o = begin; o < end; ++o) {
            dequantize_row(w.dtype(), src + o * row_size, row.data(), cols);
            std::fill(delta.begin(), delta.end(), 0.0f);
            for (int64_t r = 0; r < rank; ++r) {
                const float c = u[o * rank + r];
                const float* dr = d + r * cols;
                for (int64_t j = 0; j < cols; ++j) delta[j] += c * dr[j];
            }
            for (int64_t j = 0; j < cols; ++j) row[j] += term.scale * delta[j];
            quantize_row(w.dtype(), row.data(), dst + o * row_size, cols);
        }
    });
    return out;
}

Tensor kron(const Tensor& a, const Tensor& b) {
    SD_CHECK(a.dim() == 2 && (b.dim() == 2 || b.dim() == 4), "kron of %s and %s",
             a.describe().c_str(), b.describe().c_str());
    const int64_t a0 = a.size(0), a1 = a.size(1), b0 = b.size(0), b1 = b.size(1);
    const int64_t k = b.numel() / (b0 * b1);
    Shape shape = b.shape();
    shape[0] = a0 * b0;
    shape[1] = a1 * b1;
    Tensor out = Tensor::empty(shape);
    const std::vector<float> av = a.contiguous().to_vector(), bv = b.contiguous().to_vector();
    float* o = out.data<float>();
    for (int64_t i = 0; i < a0; ++i)
        for (int64_t p = 0; p < b0; ++p)
            for (int64_t j = 0; j < a1; ++j)
                for (int64_t q = 0; q < b1; ++q) {
                    const float s = av[static_cast<size_t>(i * a1 + j)];
                    const float* src = &bv[static_cast<size_t>((p * b1 + q) * k)];
                    float* dst = o + ((i * b0 + p) * (a1 * b1) + (j * b1 + q)) * k;
                    for (int64_t t = 0; t < k; ++t) dst[t] = s * src[t];
                }
    return out;
}

Tensor lora_delta(const LoraModule& m, const Shape& shape, float multiplier, const Tensor& base) {
    SD_CHECK(shape.size() >= 2, "LoRA module '%s' targets a weight of %s", m.key.c_str(),
             shape.to_string().c_str());
    switch (m.kind()) {
        case LoraKind::LowRank: {
            Tensor d = low_rank_delta(m, shape) * lora_scale(m);
            if (m.has("dora_scale")) return dora_delta(m, base, d) * multiplier;
            return d * multiplier;
        }
        case LoraKind::LoHa:
            return loha_delta(m, shape) * multiplier;
        case LoraKind::LoKr:
            return lokr_delta(m, shape) * multiplier;
        case LoraKind::Diff:
            return fit(m.part("diff"), shape, m) * multiplier;
        case LoraKind::Incomplete:
            break;
    }
    fail("LoRA module '%s' is incomplete", m.key.c_str());
}

LowRankTerm lora_term(const LoraModule& m, const Shape& shape, float multiplier) {
    LowRankTerm t;
    t.scale = lora_scale(m) * multiplier;
    Tensor down = mat(m.part("down")), up = mat(m.part("up"));
    const int64_t r = down.size(0), out = shape[0], per_row = shape.numel() / shape[0];
    const Tensor* mid = m.has("mid") ? &m.part("mid") : nullptr;
    const bool fits = up.size(0) == out &&
                      (mid ? mid->dim() == 4 && up.size(1) == mid->size(0) && mid->size(1) == r &&
                                 shape.size() == 4 && down.size(1) == shape[1] &&
                                 mid->size(2) == shape[2] && mid->size(3) == shape[3]
                           : up.size(1) == r && down.size(1) == per_row);
    SD_CHECK(fits, "LoRA module '%s': lora_up %s and lora_down %s do not fit a weight of %s",
             m.key.c_str(), up.describe().c_str(), down.describe().c_str(),
             shape.to_string().c_str());
    if (shape.size() == 2) {
        SD_CHECK(!m.has("mid"), "LoRA module '%s' has a lora_mid for a linear weight",
                 m.key.c_str());
        t.down = down;
        t.up = up;
        return t;
    }
    t.up = up.view({up.size(0), up.size(1), 1, 1});
    if (m.has("mid")) {
        t.down = down.view({r, down.size(1), 1, 1});
        t.mid = m.part("mid").contiguous();
    } else {
        t.down = down.view({r, shape[1], shape[2], shape[3]});
    }
    return t;
}

}  // namespace sd
