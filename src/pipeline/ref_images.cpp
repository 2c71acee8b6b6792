#include "pipeline/ref_images.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/cancel.h"
#include "base/error.h"
#include "base/log.h"
#include "pipeline/image_tensor.h"

namespace sd {
namespace {

using Mode = RefIndexMode;
using Vlm = RefVlmResize;

// The reference's REF_IMAGE_PRESETS (fields not named keep RefImageParams' defaults).
const std::map<std::string, RefImageParams>& presets() {
    static const std::map<std::string, RefImageParams> table = {
        {"flux_kontext", {.index_mode = Mode::Fixed, .vlm_resize_mode = Vlm::None}},
        {"longcat", {.pass_to_vlm = true, .index_mode = Mode::Fixed, .vlm_resize_mode = Vlm::Area}},
        {"flux2", {.index_mode = Mode::Increase, .vlm_resize_mode = Vlm::None}},
        {"qwen", {.pass_to_vlm = true, .index_mode = Mode::Increase, .vlm_resize_mode = Vlm::Area}},
        {"qwen_layered",
         {.pass_to_vlm = true, .index_mode = Mode::Decrease, .vlm_resize_mode = Vlm::Area}},
        {"mage_flow",
         {.pass_to_vlm = true,
          .index_mode = Mode::Increase,
          .vlm_resize_mode = Vlm::LongestSide,
          .vlm_max_size = 384,
          .resize_vae_to_target = true}},
        {"z_image_omni",
         {.pass_to_vlm = true, .index_mode = Mode::Fixed, .vlm_resize_mode = Vlm::Area}},
        {"krea2_ostris_edit",
         {.pass_to_vlm = true,
          .index_mode = Mode::Increase,
          .force_ref_timestep_zero = true,
          .vlm_resize_mode = Vlm::Area}},
        {"krea2_edit",
         {.pass_to_vlm = true,
          .index_mode = Mode::Increase,
          .vlm_resize_mode = Vlm::LongestSide,
          .vlm_min_size = 768,
          .vlm_max_size = 768}},
        {"cosmos_reference",
         {.index_mode = Mode::Increase, .resize_before_vae = false, .vlm_resize_mode = Vlm::None}},
    };
    return table;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool to_bool(const std::string& key, const std::string& v) {
    if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
    if (v == "false" || v == "0" || v == "no" || v == "off") return false;
    fail("--ref-image-args: %s=%s is not a boolean (true or false)", key.c_str(), v.c_str());
}

int64_t to_int(const std::string& key, const std::string& v) {
    try {
        size_t used = 0;
        const long long n = std::stoll(v, &used);
        if (used == v.size()) return n;
    } catch (const std::exception&) {
    }
    fail("--ref-image-args: %s=%s is not an integer", key.c_str(), v.c_str());
}

void apply(RefImageParams& p, const std::string& key, const std::string& v,
           const std::string& family_preset) {
    if (key == "preset") {
        p = ref_image_preset(v == "default" ? family_preset : v);
    } else if (key == "pass_to_vlm") {
        p.pass_to_vlm = to_bool(key, v);
    } else if (key == "pass_to_dit") {
        p.pass_to_dit = to_bool(key, v);
    } else if (key == "ref_index_mode") {
        if (v == "fixed") {
            p.index_mode = Mode::Fixed;
        } else if (v == "increase") {
            p.index_mode = Mode::Increase;
        } else if (v == "decrease") {
            p.index_mode = Mode::Decrease;
        } else {
            fail("--ref-image-args: ref_index_mode=%s: use fixed, increase or decrease", v.c_str());
        }
    } else if (key == "force_ref_timestep_zero") {
        p.force_ref_timestep_zero = to_bool(key, v);
    } else if (key == "resize_before_vae") {
        p.resize_before_vae = to_bool(key, v);
    } else if (key == "vae_input_max_pixels") {
        p.vae_input_max_pixels = to_int(key, v);
    } else if (key == "vlm_resize_mode") {
        if (v == "none") {
            p.vlm_resize_mode = Vlm::None;
        } else if (v == "longest_side") {
            p.vlm_resize_mode = Vlm::LongestSide;
        } else if (v == "area") {
            p.vlm_resize_mode = Vlm::Area;
        } else {
            fail("--ref-image-args: vlm_resize_mode=%s: use none, longest_side or area", v.c_str());
        }
    } else if (key == "vlm_min_size") {
        p.vlm_min_size = to_int(key, v);
    } else if (key == "vlm_max_size") {
        p.vlm_max_size = to_int(key, v);
    } else if (key == "vlm_size") {
        p.vlm_min_size = p.vlm_max_size = to_int(key, v);
    } else if (key == "resize_vae_to_target") {
        p.resize_vae_to_target = to_bool(key, v);
    } else {
        fail(
            "--ref-image-args: unknown key '%s' (preset, pass_to_vlm, pass_to_dit, "
            "ref_index_mode, force_ref_timestep_zero, resize_before_vae, vae_input_max_pixels, "
            "vlm_resize_mode, vlm_min_size, vlm_max_size, vlm_size, resize_vae_to_target)",
            key.c_str());
    }
}

}  // namespace

RefImageParams ref_image_preset(const std::string& name) {
    const auto it = presets().find(name);
    if (it != presets().end()) return it->second;
    std::string names;
    for (const auto& [n, p] : presets()) names += (names.empty() ? "" : ", ") + n;
    fail("--ref-image-args: unknown preset '%s' (%s, default)", name.c_str(), names.c_str());
}

RefImageParams parse_ref_image_args(const std::string& spec, const std::string& family_preset) {
    RefImageParams p = ref_image_preset(family_preset);
    size_t at = 0;
    while (at <= spec.size()) {
        const size_t end = std::min(spec.find_first_of(",;", at), spec.size());
        const std::string item = trim(spec.substr(at, end - at));
        at = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        SD_CHECK(eq != std::string::npos, "--ref-image-args: '%s' is not key=value", item.c_str());
        apply(p, trim(item.substr(0, eq)), trim(item.substr(eq + 1)), family_preset);
    }
    return p;
}

std::pair<int64_t, int64_t> ref_vae_size(int64_t ref_w, int64_t ref_h, int64_t width,
                                         int64_t height, const RefImageParams& params,
                                         int64_t multiple) {
    double w = static_cast<double>(width), h = static_cast<double>(height);
    if (!params.resize_vae_to_target) {
        const int64_t target =
            params.vae_input_max_pixels > 0 ? params.vae_input_max_pixels : 1024 * 1024;
        const int64_t area = std::min(target, width * height);
        // The reference divides in integers before the square root.
        w = std::sqrt(static_cast<double>(area * ref_w / ref_h));
        h = w * static_cast<double>(ref_h) / static_cast<double>(ref_w);
    }
    const double m = static_cast<double>(multiple);
    auto rounded = [&](double side) {
        return std::max(multiple, static_cast<int64_t>(std::round(side / m)) * multiple);
    };
    return {rounded(w), rounded(h)};
}

image::Image resize_nearest(const image::Image& in, uint32_t width, uint32_t height) {
    if (in.width == width && in.height == height) return in;
    image::Image out{width, height, in.channels, {}};
    out.pixels.resize(static_cast<size_t>(width) * height * in.channels);
    const size_t c = in.channels;
    for (uint64_t y = 0; y < height; ++y) {
        const uint64_t sy = y * in.height / height;
        for (uint64_t x = 0; x < width; ++x) {
            const uint64_t sx = x * in.width / width;
            std::copy_n(&in.pixels[(sy * in.width + sx) * c], c, &out.pixels[(y * width + x) * c]);
        }
    }
    return out;
}

std::vector<Tensor> encode_ref_latents(const ModelComponents& m,
                                       const std::vector<image::Image>& refs,
                                       const RefImageParams& params, int64_t width, int64_t height,
                                       Rng& rng) {
    std::vector<Tensor> latents;
    if (refs.empty() || !params.pass_to_dit) return latents;
    SD_CHECK(m.codec->has_encoder(),
             "--ref-image needs the VAE encoder to encode the reference images, which was not "
             "loaded");
    for (size_t i = 0; i < refs.size(); ++i) {
        image::Image img = refs[i];
        if (params.resize_before_vae) {
            const auto [w, h] = ref_vae_size(img.width, img.height, width, height, params,
                                             m.ref_images.size_multiple);
            SD_LOG_INFO("reference image %zu: %ux%u resized to %lldx%lld for the VAE", i + 1,
                        img.width, img.height, (long long)w, (long long)h);
            img = resize_nearest(img, static_cast<uint32_t>(w), static_cast<uint32_t>(h));
        }
        latents.push_back(to_model_latent(
            m.latent, m.codec->encode(color_image_to_tensor(img, m.codec->image_channels()), rng)));
        cancellation_point();
    }
    return latents;
}

}  // namespace sd
