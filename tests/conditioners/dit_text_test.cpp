// The DiT families' text helpers: the reference's key mask of padded T5 states for a DiT
// (Chroma's chroma_use_dit_mask / chroma_t5_mask_pad), worked out by hand.
#include "conditioners/dit_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sd {
namespace {

std::vector<float> mask_of(const std::vector<float>& keep, int attend_pads) {
    return t5_key_mask(keep, attend_pads).to_vector();
}

TEST(T5KeyMask, PadsAreSkippedButTheFirstFew) {
    const float inf = INFINITY;
    const std::vector<float> keep = {1, 1, 1, 0, 0, 0};
    EXPECT_EQ(mask_of(keep, 1), (std::vector<float>{0, 0, 0, 0, -inf, -inf}));  // the default
    EXPECT_EQ(mask_of(keep, 0), (std::vector<float>{0, 0, 0, -inf, -inf, -inf}));
    EXPECT_EQ(mask_of(keep, 10), (std::vector<float>(6, 0.0f)));
    // Several windows: the first pads of the whole sequence are opened, as the reference's
    // modify_mask_to_attend_padding does.
    EXPECT_EQ(mask_of({1, 1, 0, 0, 1, 1, 1, 0}, 1),
              (std::vector<float>{0, 0, 0, -inf, 0, 0, 0, -inf}));
    EXPECT_EQ(mask_of({1, 1, 0, 0, 1, 1, 1, 0}, 3), (std::vector<float>(8, 0.0f)));
}

}  // namespace
}  // namespace sd
