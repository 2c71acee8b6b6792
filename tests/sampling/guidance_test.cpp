// Guidance formulas against values worked out by hand.
#include "sampling/guidance.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace sd {
namespace {

Tensor vec(std::vector<float> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return Tensor::from_vector({1, n}, std::move(v));
}

TEST(Guidance, ClassifierFree) {
    // uncond + (cond - uncond) * s: 1 + (3 - 1) * 7.5 = 16; -2 + (0 + 2) * 7.5 = 13; s = 1 gives
    // cond.
    std::vector<float> out = classifier_free_guidance(vec({3, 0}), vec({1, -2}), 7.5f).to_vector();
    EXPECT_FLOAT_EQ(out[0], 16.0f);
    EXPECT_FLOAT_EQ(out[1], 13.0f);
    out = classifier_free_guidance(vec({3, 0}), vec({1, -2}), 1.0f).to_vector();
    EXPECT_FLOAT_EQ(out[0], 3.0f);
    EXPECT_FLOAT_EQ(out[1], 0.0f);
}

TEST(Guidance, ImageAndText) {
    // uncond 1, img_cond 2, cond 5, img 1.5, txt 7: 1 + (2 - 1) * 1.5 + (5 - 2) * 7 = 23.5.
    std::vector<float> out =
        image_text_guidance(vec({5}), vec({2}), vec({1}), 7.0f, 1.5f).to_vector();
    EXPECT_FLOAT_EQ(out[0], 23.5f);
    // img_scale = txt_scale is plain CFG on cond / uncond.
    out = image_text_guidance(vec({5}), vec({2}), vec({1}), 3.0f, 3.0f).to_vector();
    EXPECT_FLOAT_EQ(out[0], 1.0f + (5.0f - 1.0f) * 3.0f);
}

TEST(Guidance, SkipLayer) {
    // guided + (cond - skipped) * scale: 4 + (3 - 2.5) * 2.5 = 5.25.
    EXPECT_FLOAT_EQ(skip_layer_guidance(vec({4}), vec({3}), vec({2.5}), 2.5f).to_vector()[0],
                    5.25f);
    EXPECT_THROW(skip_layer_guidance(vec({4}), vec({3}), vec({1, 2}), 2.5f), Error);
}

TEST(Guidance, ShapesMustAgree) {
    EXPECT_THROW(classifier_free_guidance(vec({1, 2}), vec({1}), 2.0f), Error);
    EXPECT_THROW(image_text_guidance(vec({1}), vec({1, 2}), vec({1}), 2.0f, 1.0f), Error);
}

}  // namespace
}  // namespace sd
