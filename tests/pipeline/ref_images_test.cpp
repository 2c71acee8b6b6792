// Reference images' preparation: --ref-image-args over a family's preset (the CLI's flags
// appended after it win), the size rule before the VAE against hand-worked values, nearest
// resampling, and bad options named.
#include "pipeline/ref_images.h"

#include <gtest/gtest.h>

#include "io/io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(RefImageArgs, FamilyPresetThenOverridesLeftToRight) {
    const RefImageParams kontext = parse_ref_image_args("", "flux_kontext");
    EXPECT_EQ(kontext.index_mode, RefIndexMode::Fixed);
    EXPECT_TRUE(kontext.resize_before_vae);
    EXPECT_TRUE(kontext.pass_to_dit);
    EXPECT_FALSE(kontext.pass_to_vlm);
    EXPECT_EQ(kontext.vae_input_max_pixels, -1);
    // What --increase-ref-index / --disable-auto-resize-ref-image append.
    const RefImageParams flags =
        parse_ref_image_args("ref_index_mode=increase,resize_before_vae=false", "flux_kontext");
    EXPECT_EQ(flags.index_mode, RefIndexMode::Increase);
    EXPECT_FALSE(flags.resize_before_vae);
    // A preset starts over; later keys override it; ';' separates too; "default" is the family's.
    const RefImageParams qwen = parse_ref_image_args(
        "ref_index_mode=decrease, preset=qwen ; vlm_size=512;vae_input_max_pixels=262144",
        "flux_kontext");
    EXPECT_TRUE(qwen.pass_to_vlm);
    EXPECT_EQ(qwen.index_mode, RefIndexMode::Increase);
    EXPECT_EQ(qwen.vlm_min_size, 512);
    EXPECT_EQ(qwen.vlm_max_size, 512);
    EXPECT_EQ(qwen.vae_input_max_pixels, 262144);
    EXPECT_EQ(parse_ref_image_args("preset=qwen_layered", "flux_kontext").index_mode,
              RefIndexMode::Decrease);
    EXPECT_EQ(parse_ref_image_args("preset=flux2,preset=default", "flux_kontext").index_mode,
              RefIndexMode::Fixed);
    EXPECT_TRUE(parse_ref_image_args("preset=mage_flow", "flux_kontext").resize_vae_to_target);
    EXPECT_FALSE(parse_ref_image_args("resize_before_vae=0", "flux_kontext").resize_before_vae);
}

// Every preset against the reference's REF_IMAGE_PRESETS table, field by field.
TEST(RefImageArgs, PresetsMatchTheReferenceTable) {
    using M = RefIndexMode;
    using V = RefVlmResize;
    struct Row {
        const char* name;
        bool vlm;
        M mode;
        bool t_zero, resize;
        V vlm_resize;
        int64_t vlm_min, vlm_max;
        bool to_target;
    };
    const Row rows[] = {
        {"flux_kontext", false, M::Fixed, false, true, V::None, -1, -1, false},
        {"longcat", true, M::Fixed, false, true, V::Area, -1, -1, false},
        {"flux2", false, M::Increase, false, true, V::None, -1, -1, false},
        {"qwen", true, M::Increase, false, true, V::Area, -1, -1, false},
        {"qwen_layered", true, M::Decrease, false, true, V::Area, -1, -1, false},
        {"mage_flow", true, M::Increase, false, true, V::LongestSide, -1, 384, true},
        {"z_image_omni", true, M::Fixed, false, true, V::Area, -1, -1, false},
        {"krea2_ostris_edit", true, M::Increase, true, true, V::Area, -1, -1, false},
        {"krea2_edit", true, M::Increase, false, true, V::LongestSide, 768, 768, false},
        {"cosmos_reference", false, M::Increase, false, false, V::None, -1, -1, false},
    };
    for (const Row& r : rows) {
        const RefImageParams p = ref_image_preset(r.name);
        EXPECT_EQ(p.pass_to_vlm, r.vlm) << r.name;
        EXPECT_TRUE(p.pass_to_dit) << r.name;
        EXPECT_EQ(p.index_mode, r.mode) << r.name;
        EXPECT_EQ(p.force_ref_timestep_zero, r.t_zero) << r.name;
        EXPECT_EQ(p.resize_before_vae, r.resize) << r.name;
        EXPECT_EQ(p.vae_input_max_pixels, -1) << r.name;
        EXPECT_EQ(p.vlm_resize_mode, r.vlm_resize) << r.name;
        EXPECT_EQ(p.vlm_min_size, r.vlm_min) << r.name;
        EXPECT_EQ(p.vlm_max_size, r.vlm_max) << r.name;
        EXPECT_EQ(p.resize_vae_to_target, r.to_target) << r.name;
    }
}

TEST(RefImageArgs, BadOptionsAreNamed) {
    const std::pair<const char*, const char*> cases[] = {
        {"colour=red", "unknown key 'colour'"},
        {"preset=kontext", "unknown preset 'kontext'"},
        {"ref_index_mode=sideways", "ref_index_mode=sideways"},
        {"resize_before_vae=maybe", "resize_before_vae=maybe is not a boolean"},
        {"vae_input_max_pixels=lots", "vae_input_max_pixels=lots is not an integer"},
        {"resize_before_vae", "'resize_before_vae' is not key=value"},
    };
    for (const auto& [spec, want] : cases) {
        const std::string error =
            test::error_of([&] { parse_ref_image_args(spec, "flux_kontext"); });
        EXPECT_NE(error.find(want), std::string::npos) << spec << ": " << error;
        EXPECT_NE(error.find("--ref-image-args"), std::string::npos) << error;
    }
}

TEST(RefImageSize, AreaOfTheSmallerBudgetAspectKeptRoundedTo16) {
    const RefImageParams p = parse_ref_image_args("", "flux_kontext");
    // 256x256 generation, 200x100 reference: area 65536, w = sqrt(65536 * 200 / 100) = 362.04
    // -> 368 (23 * 16), h = 181.02 -> 176 (11 * 16).
    EXPECT_EQ(ref_vae_size(200, 100, 256, 256, p, 16), (std::pair<int64_t, int64_t>{368, 176}));
    // The budget caps a large generation: 2048x2048 with a square reference -> 1024x1024.
    EXPECT_EQ(ref_vae_size(500, 500, 2048, 2048, p, 16), (std::pair<int64_t, int64_t>{1024, 1024}));
    // The reference divides in integers first: 65536 * 100 / 300 = 21845 -> w = 147.80 -> 144,
    // h = 443.41 -> 448.
    EXPECT_EQ(ref_vae_size(100, 300, 256, 256, p, 16), (std::pair<int64_t, int64_t>{144, 448}));
    RefImageParams small = p;
    small.vae_input_max_pixels = 4096;  // 64x64
    EXPECT_EQ(ref_vae_size(300, 300, 256, 256, small, 16), (std::pair<int64_t, int64_t>{64, 64}));
    EXPECT_EQ(ref_vae_size(300, 300, 256, 256, small, 32), (std::pair<int64_t, int64_t>{64, 64}));
    // A sliver keeps one multiple instead of vanishing.
    EXPECT_EQ(ref_vae_size(1000, 1, 64, 64, small, 16).second, 16);
    RefImageParams target = p;
    target.resize_vae_to_target = true;
    EXPECT_EQ(ref_vae_size(37, 999, 200, 120, target, 16), (std::pair<int64_t, int64_t>{208, 128}));
}

TEST(RefImageSize, NearestTakesTheFlooredSourcePixel) {
    // 3x1 RGB -> 5x2: x' = 0..4 -> x = floor(x' * 3 / 5) = 0, 0, 1, 1, 2.
    const image::Image in{3, 1, 3, {10, 11, 12, 20, 21, 22, 30, 31, 32}};
    const image::Image out = resize_nearest(in, 5, 2);
    ASSERT_EQ(out.width, 5u);
    ASSERT_EQ(out.height, 2u);
    const std::vector<uint8_t> row = {10, 11, 12, 10, 11, 12, 20, 21, 22, 20, 21, 22, 30, 31, 32};
    std::vector<uint8_t> want = row;
    want.insert(want.end(), row.begin(), row.end());
    EXPECT_EQ(out.pixels, want);
    EXPECT_EQ(resize_nearest(out, 2, 1).pixels, (std::vector<uint8_t>{10, 11, 12, 20, 21, 22}));
}

}  // namespace
}  // namespace sd
