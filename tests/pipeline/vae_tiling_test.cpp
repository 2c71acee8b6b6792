// Tiled decoding and cancellation: a cancel between tiles ends the decode with sd::Cancelled
// before the next tile runs.
#include "pipeline/vae_tiling.h"

#include <gtest/gtest.h>

#include "base/cancel.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(VaeTiling, CancelStopsBetweenTiles) {
    const Tensor z = test::random_tensor({1, 4, 24, 40}, 3);
    CancelToken token;
    const CancelScope scope(&token);
    int tiles = 0, cancel_at = 3;
    auto decode = [&](const Tensor& t) {
        if (++tiles == cancel_at) token.cancel();
        return Tensor::zeros({1, 3, t.size(2) * 8, t.size(3) * 8});
    };
    EXPECT_THROW(decode_tiled(decode, z, 16, 0.25f), Cancelled);
    EXPECT_EQ(tiles, 3);
    token.reset();
    tiles = 0;
    cancel_at = -1;
    const Tensor out = decode_tiled(decode, z, 16, 0.25f);
    EXPECT_GT(tiles, 3) << "all tiles once not cancelled";
    EXPECT_EQ(out.size(2), 24 * 8);
}

}  // namespace
}  // namespace sd
