#include "nn/clip_blocks.h"

#include <algorithm>

#include "base/error.h"

namespace sd {

ClipEncoderLayer ClipEncoderLayer::load(const Weights& w, int64_t hidden, int64_t intermediate) {
    ClipEncoderLayer l;
    l.layer_norm1 = LayerNorm::load(w["layer_norm1"], hidden, 1e-5f);
    l.layer_norm2 = LayerNorm::load(w["layer_norm2"], hidden, 1e-5f);
    const Weights attn = w["self_attn"];
    l.q_proj = Linear::load(attn["q_proj"], hidden, hidden);
    l.k_proj = Linear::load(attn["k_proj"], hidden, hidden);
    l.v_proj = Linear::load(attn["v_proj"], hidden, hidden);
    l.out_proj = Linear::load(attn["out_proj"], hidden, hidden);
    l.fc1 = Linear::load(w["mlp"]["fc1"], hidden, intermediate);
    l.fc2 = Linear::load(w["mlp"]["fc2"], intermediate, hidden);
    return l;
}

Tensor ClipEncoderLayer::forward(const Tensor& x, int64_t heads, bool quick, bool causal) const {
    Tensor h = layer_norm1.forward(x);
    Tensor attn = multi_head_attention(q_proj.forward(h), k_proj.forward(h), v_proj.forward(h),
                                       heads, {}, causal);
    Tensor r = x + out_proj.forward(attn);
    h = fc1.forward(layer_norm2.forward(r));
    h = quick ? quick_gelu(h) : gelu(h);
    return r + fc2.forward(h);
}

ClipEncoder ClipEncoder::load(const Weights& w, int64_t depth, int64_t hidden, int64_t intermediate,
                              int64_t heads, bool quick_gelu, bool causal) {
    SD_CHECK(heads > 0 && hidden % heads == 0, "CLIP encoder '%s': width %lld in %lld heads",
             w.prefix().c_str(), (long long)hidden, (long long)heads);
    ClipEncoder e;
    e.heads = heads;
    e.quick_gelu = quick_gelu;
    e.causal = causal;
    e.layers.reserve(static_cast<size_t>(depth));
    for (int64_t i = 0; i < depth; ++i)
        e.layers.push_back(
            ClipEncoderLayer::load(w["layers"][static_cast<int>(i)], hidden, intermediate));
    return e;
}

Tensor ClipEncoder::forward(const Tensor& x, int64_t count) const {
    SD_CHECK(count >= 0 && count <= depth(), "CLIP encoder: %lld of its %lld layers",
             (long long)count, (long long)depth());
    Tensor h = x;
    for (int64_t i = 0; i < count; ++i)
        h = layers[static_cast<size_t>(i)].forward(h, heads, quick_gelu, causal);
    return h;
}

Tensor clip_image_preprocess(const Tensor& image, int64_t out_h, int64_t out_w, const char* model) {
    SD_CHECK(image.defined() && image.dtype() == DType::F32 && image.dim() == 4 &&
                 image.size(0) == 1 && image.size(1) == 3 && image.size(2) > 0 && image.size(3) > 0,
             "%s: the image must be f32 [1, 3, H, W], not %s", model,
             image.defined() ? image.describe().c_str() : "undefined");
    SD_CHECK(out_h > 0 && out_w > 0, "%s: cannot resize an image to %lld x %lld px", model,
             (long long)out_h, (long long)out_w);
    const int64_t H = image.size(2), W = image.size(3);
    // The reference's float arithmetic; a side never below the crop (its product may fall short).
    const float scale = std::max(static_cast<float>(out_w) / static_cast<float>(W),
                                 static_cast<float>(out_h) / static_cast<float>(H));
    const int64_t rh = std::max(out_h, static_cast<int64_t>(scale * static_cast<float>(H)));
    const int64_t rw = std::max(out_w, static_cast<int64_t>(scale * static_cast<float>(W)));
    const Tensor resized =
        (rh == H && rw == W) ? image : interpolate(image, rh, rw, InterpolateMode::Nearest);
    const Tensor cropped =
        resized.narrow(2, (rh - out_h) / 2, out_h).narrow(3, (rw - out_w) / 2, out_w);
    const Tensor mean = Tensor::from_vector(
        {1, 3, 1, 1}, {kClipImageMean[0], kClipImageMean[1], kClipImageMean[2]});
    const Tensor stdev =
        Tensor::from_vector({1, 3, 1, 1}, {kClipImageStd[0], kClipImageStd[1], kClipImageStd[2]});
    return div(sub(clamp(cropped, 0.0f, 1.0f), mean), stdev);
}

}  // namespace sd
