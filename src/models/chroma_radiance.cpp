#include "models/chroma_radiance.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"
#include "base/log.h"
#include "gpu/device_tensor.h"
#include "nn/dit_blocks.h"

namespace sd {
namespace {

constexpr const char* kModel = "Chroma-Radiance";
constexpr float kNormEps = 1e-6f;
constexpr float kL2Eps = 1e-12f;  // F.normalize's (ggml_l2_norm's in the reference)
constexpr int kPatchConv = 16;    // img_in_patch's kernel and stride, whatever the patch

// Part `part` (0 the gate, 1 the value, 2 the output projection) of a NerfGLUBlock's generated
// weights, params [n, 3 rows cols] (contiguous), as [n, rows, cols] with each column divided by
// its L2 norm (F.normalize(dim=-2)): the RMS norm of each column over sqrt(rows).
Tensor normalized_columns(const Tensor& params, int part, int64_t rows, int64_t cols) {
    const int64_t n = params.size(0), k = rows * cols;
    const Tensor columns =
        params.as_strided({n, cols, rows}, {3 * k, 1, cols}, params.offset() + part * k);
    const float eps = kL2Eps * kL2Eps / static_cast<float>(rows);
    const Tensor normed = rms_norm(columns.contiguous(), {}, eps);  // [n, cols, rows]
    return scale(normed, 1.0f / std::sqrt(static_cast<float>(rows))).transpose(1, 2);
}

}  // namespace

Tensor nerf_position_code(int64_t patch, int64_t max_freqs) {
    SD_CHECK(patch >= 2 && max_freqs >= 1, "%s: position code of patch %lld, %lld frequencies",
             kModel, (long long)patch, (long long)max_freqs);
    const int64_t features = max_freqs * max_freqs;
    Tensor code = Tensor::empty({patch * patch, features});
    float* d = code.data<float>();
    const float pi = std::numbers::pi_v<float>;
    for (int64_t i = 0; i < patch; ++i) {
        for (int64_t j = 0; j < patch; ++j) {
            // f32 throughout, as the reference computes it.
            const float y = static_cast<float>(i) / static_cast<float>(patch - 1);
            const float x = static_cast<float>(j) / static_cast<float>(patch - 1);
            float* row = d + (i * patch + j) * features;
            for (int64_t u = 0; u < max_freqs; ++u) {
                const float cx = std::cos(x * static_cast<float>(u) * pi);
                for (int64_t v = 0; v < max_freqs; ++v) {
                    const float cy = std::cos(y * static_cast<float>(v) * pi);
                    row[u * max_freqs + v] =
                        cx * cy * (1.0f / (1.0f + static_cast<float>(u) * static_cast<float>(v)));
                }
            }
        }
    }
    return code;
}

ChromaRadianceModel ChromaRadianceModel::load(const Weights& w) {
    SD_CHECK(w.has("img_in_patch.weight"), "no %s model under '%s' (no img_in_patch.weight)",
             kModel, w.prefix().c_str());
    SD_CHECK(w.has("distilled_guidance_layer.in_proj.weight"),
             "%s under '%s' has no distilled_guidance_layer: its transformer is Chroma's", kModel,
             w.prefix().c_str());
    ChromaRadianceModel m;
    ChromaRadianceConfig& c = m.config_;
    c.channels = w.dim_of("img_in_patch.weight", 1, kModel);
    const int64_t hidden = w.dim_of("img_in_patch.weight", 0, kModel);
    // The variants' markers: empty tensors, read by name only.
    c.x0 = w.has("__x0__");
    if (w.has("__32x32__")) c.patch = 32;
    w.skip("__x0__");
    w.skip("__32x32__");

    const std::string embedder = "nerf_image_embedder.embedder.0.weight";
    c.nerf_hidden = w.dim_of(embedder, 0, kModel);
    const int64_t codes = w.dim_of(embedder, 1, kModel) - c.channels;
    c.max_freqs = static_cast<int64_t>(
        std::lround(std::sqrt(static_cast<double>(std::max<int64_t>(codes, 0)))));
    SD_CHECK(c.max_freqs >= 1 && c.max_freqs * c.max_freqs == codes,
             "%s: %s takes %lld values, not the %lld pixel channels and a square number of "
             "position codes",
             kModel, embedder.c_str(), (long long)(codes + c.channels), (long long)c.channels);
    const int depth = w.count_numbered("nerf_blocks", "param_generator.weight");
    SD_CHECK(depth > 0, "%s under '%s' has no nerf_blocks.0.param_generator", kModel,
             w.prefix().c_str());
    const int64_t generated = w.dim_of("nerf_blocks.0.param_generator.weight", 0, kModel);
    const int64_t square = 3 * c.nerf_hidden * c.nerf_hidden;
    c.nerf_mlp_ratio = generated / square;
    SD_CHECK(c.nerf_mlp_ratio >= 1 && c.nerf_mlp_ratio * square == generated,
             "%s: nerf_blocks.0.param_generator makes %lld values, not 3 x %lld^2 x a ratio",
             kModel, (long long)generated, (long long)c.nerf_hidden);

    m.img_in_patch = Conv2d::load(w["img_in_patch"], c.channels, hidden, kPatchConv, kPatchConv, 0);
    m.nerf_embedder =
        Linear::load(w["nerf_image_embedder"]["embedder"]["0"], c.channels + codes, c.nerf_hidden);
    for (int i = 0; i < depth; ++i) {
        const Weights b = w["nerf_blocks"][i];
        m.nerf_blocks.push_back({Linear::load(b["param_generator"], hidden, generated),
                                 b.get("norm.scale", {c.nerf_hidden})});
    }
    m.final_norm_scale = w.get("nerf_final_layer_conv.norm.scale", {c.nerf_hidden});
    m.final_conv = Conv2d::load(w["nerf_final_layer_conv"]["conv"], c.nerf_hidden, c.channels, 3);
    m.transformer_ = FluxModel::load(w, FluxHeads::None);
    w.check(kModel);
    m.pages_ = w.pages();
    m.position_code = nerf_position_code(c.patch, c.max_freqs);
    SD_LOG_INFO("%s: %lldx%lld pixel patches%s, NeRF head of %d blocks, width %lld", kModel,
                (long long)c.patch, (long long)c.patch, c.x0 ? ", x0 prediction" : "", depth,
                (long long)c.nerf_hidden);
    return m;
}

Tensor ChromaRadianceModel::decode_patches(const Tensor& pixels, const Tensor& states,
                                           int64_t first, int64_t n) const {
    const ChromaRadianceConfig& c = config_;
    const int64_t nh = c.nerf_hidden, mlp = nh * c.nerf_mlp_ratio, p2 = c.patch * c.patch;
    // The pixels beside their position code: [n, P^2, C + F^2].
    const Tensor code =
        gpu::placed_like(position_code, pixels).unsqueeze(0).expand({n, p2, position_code.size(1)});
    Tensor x = nerf_embedder.forward(concat({pixels.narrow(0, first, n), code}, 2));
    const Tensor s = states.narrow(0, first, n);
    for (const NerfGluBlock& b : nerf_blocks) {
        const Tensor params = b.param_generator.forward(s);  // [n, 3 nh mlp]
        const Tensor xn = rms_norm(x, b.norm_scale, kNormEps);
        const Tensor gate = silu(matmul(xn, normalized_columns(params, 0, nh, mlp)));
        const Tensor value = matmul(xn, normalized_columns(params, 1, nh, mlp));
        x = x + matmul(gate * value, normalized_columns(params, 2, mlp, nh));
    }
    return x;
}

Tensor ChromaRadianceModel::forward(const Tensor& x, const Tensor& timesteps, const Tensor& context,
                                    const Tensor& txt_mask) const {
    const ChromaRadianceConfig& c = config_;
    const int64_t P = c.patch;
    SD_CHECK(x.dim() == 4 && x.size(0) == 1 && x.size(1) == c.channels,
             "%s: input %s, want the image [1, %lld, H, W]", kModel, x.describe().c_str(),
             (long long)c.channels);
    const int64_t H = x.size(2), W = x.size(3);
    const int64_t h = (H + P - 1) / P, w = (W + P - 1) / P, Hp = h * P, Wp = w * P;
    // Padded to whole patches (the reference's pad_to_patch_size); cropped back at the end.
    const Tensor image = Hp == H && Wp == W ? x : pad2d(x, 0, Wp - W, 0, Hp - H);
    // 32x32 patches: the transformer's 16x16 convolution reads the image at half size.
    const Tensor small =
        P == kPatchConv ? image : interpolate(image, Hp / 2, Wp / 2, InterpolateMode::Bilinear);
    const Tensor tokens = img_in_patch.forward(small).flatten(2).transpose(1, 2).contiguous();
    const Tensor states =
        transformer_.transform(tokens, h, w, timesteps, context, {}, 0.0f, txt_mask).squeeze(0);

    // Each patch's pixels [h w, P^2, C], decoded by the NeRF head a slice of patches at a time:
    // a patch's generated weights are 3 nh^2 ratio values (49152 in the released model).
    const int64_t patches = h * w, p2 = P * P, nh = c.nerf_hidden;
    const Tensor pixels = patchify(image, P, PatchLayout::ChannelsFirst)
                              .view({patches, c.channels, p2})
                              .transpose(1, 2)
                              .contiguous();
    const int64_t per_slice =
        std::clamp<int64_t>((int64_t{1} << 24) / (3 * nh * nh * c.nerf_mlp_ratio), 1, patches);
    Tensor decoded = gpu::empty_like_place(
        pixels, {patches, nh, p2});  // channels before pixels, as unpatchify's
    for (int64_t first = 0; first < patches; first += per_slice) {
        const int64_t n = std::min(per_slice, patches - first);
        copy_into(decode_patches(pixels, states, first, n).transpose(1, 2),
                  decoded.narrow(0, first, n));
    }
    const Tensor features =
        unpatchify(decoded.view({1, patches, nh * p2}), nh, Hp, Wp, P, PatchLayout::ChannelsFirst);
    Tensor out = final_conv.forward(rms_norm_channels(features, final_norm_scale, kNormEps));
    // x0 prediction: the flow velocity (x - x0) / t.
    if (c.x0) out = scale(image - out, 1.0f / std::max(timesteps.item(), 1e-6f));
    return Hp == H && Wp == W ? out : out.narrow(2, 0, H).narrow(3, 0, W).contiguous();
}

}  // namespace sd
