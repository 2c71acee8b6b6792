// sum / mean along one dimension: every kernel family against the double-accumulating
// reference. Tolerance: rtol 1e-6 relative to the sum of |x| (f32 lanes within 2048-value
// blocks, double across blocks): atol 1e-6 * n, rtol 1e-6 with inputs in [-1, 1).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/reduce.h"
#include "test_util.h"

namespace sd {
namespace {

template <class F>
void for_each_isa(F f) {
    for (Isa isa : test::available_isas()) {
        test::IsaScope scope(isa);
        SCOPED_TRACE(isa_name(isa));
        f(isa);
    }
}

void check(const Tensor& x, int dim, const std::string& what) {
    const double n = static_cast<double>(x.size(dim));
    for (bool keep : {false, true}) {
        const std::string tag = what + " dim " + std::to_string(dim) + (keep ? " keepdim" : "");
        test::expect_close(sum(x, dim, keep), ref::sum(x, dim, keep), 1e-6 * n, 1e-6, "sum " + tag);
        test::expect_close(mean(x, dim, keep), ref::mean(x, dim, keep), 1e-6, 1e-6, "mean " + tag);
    }
}

TEST(Reduce, MatchesReference) {
    for_each_isa([](Isa) {
        Tensor x = test::random_tensor({3, 5, 17, 33}, 1);
        for (int dim : {0, 1, 2, 3, -1, -2}) {
            check(x, dim, "4-d");
            check(test::non_contiguous_copy(x), dim, "4-d strided");
        }
        for (int64_t n : {1, 3, 15, 16, 17, 33, 1000, 4097, 100003}) {
            Tensor r = test::random_tensor({3, n}, 2 + static_cast<uint32_t>(n));
            check(r, 1, "rows n=" + std::to_string(n));
            check(r, 0, "columns n=" + std::to_string(n));
        }
        check(test::random_tensor({2, 600, 1100}, 3), 1, "wide columns");
        check(test::random_tensor({1, 7}, 4).expand({5, 7}), 0, "expanded");
    });
}

TEST(Reduce, ShapesAndKnownValues) {
    Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(sum(x, 0).shape(), Shape({3}));
    EXPECT_EQ(sum(x, 0, true).shape(), Shape({1, 3}));
    EXPECT_EQ(sum(x, 1).to_vector(), (std::vector<float>{6, 15}));
    EXPECT_EQ(sum(x, 0).to_vector(), (std::vector<float>{5, 7, 9}));
    EXPECT_EQ(mean(x, -1, true).to_vector(), (std::vector<float>{2, 5}));
    EXPECT_EQ(mean(x, -1, true).shape(), Shape({2, 1}));
    EXPECT_EQ(sum(Tensor::from_vector({4}, {1, 2, 3, 4}), 0).shape(), Shape({}));
    EXPECT_EQ(sum(Tensor::full({}, 3.0f), 0).item(), 3.0f);
    // Empty dimension: sum 0, mean NaN (as torch).
    EXPECT_EQ(sum(Tensor::zeros({2, 0}), 1).to_vector(), (std::vector<float>{0, 0}));
    EXPECT_TRUE(std::isnan(mean(Tensor::zeros({2, 0}), 1).to_vector()[0]));
    EXPECT_EQ(sum(Tensor::zeros({0, 3}), 1).shape(), Shape({0}));
}

TEST(Reduce, LargeCountsKeepPrecision) {
    for_each_isa([](Isa) {
        // 2^22 ones: an f32 running sum would stall at 2^24 for longer rows; blocks in double
        // keep every unit.
        Tensor ones = Tensor::full({1, 1 << 22}, 1.0f);
        EXPECT_EQ(sum(ones, 1).item(), static_cast<float>(1 << 22));
        Tensor off = test::random_tensor({2, 300000}, 5, 999.0f, 1001.0f);
        test::expect_close(mean(off, 1), ref::mean(off, 1), 1e-4, 0, "mean near 1000");
    });
}

TEST(Reduce, Multithreaded) {
    set_num_threads(4);
    Tensor x = test::random_tensor({64, 77, 96}, 6);
    for (int dim : {0, 1, 2}) check(x, dim, "4 threads");
    set_num_threads(0);
}

TEST(Reduce, RejectsBadInput) {
    EXPECT_THROW(sum(Tensor::zeros({2, 3}), 2), Error);
    EXPECT_THROW(mean(Tensor::zeros({2, 3}), -3), Error);
    EXPECT_THROW(sum(Tensor::zeros({2, 3}, DType::F16), 0), Error);
    EXPECT_THROW(mean(Tensor(), 0), Error);
    EXPECT_THROW(sum(Tensor::full({}, 1.0f), 1), Error);
}

}  // namespace
}  // namespace sd
