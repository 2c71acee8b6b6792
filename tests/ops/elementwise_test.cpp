// Elementwise arithmetic with broadcasting: every kernel family against the reference for
// every broadcast pattern the models use, strided and stride-0 (expand) operands, odd sizes.
// Tolerance: exact. Both sides do the same correctly rounded f32 operation per element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/elementwise.h"
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

using BinFn = Tensor (*)(const Tensor&, const Tensor&);
struct Op {
    const char* name;
    BinFn kernel, ref;
};
const Op kOps[] = {{"add", &add, &ref::add},
                   {"sub", &sub, &ref::sub},
                   {"mul", &mul, &ref::mul},
                   {"div", &div, &ref::div}};

// Every op of a and b (and of b and a) against the reference, exactly.
void check_all(const Tensor& a, const Tensor& b, const std::string& what) {
    for (const Op& op : kOps) {
        test::expect_close(op.kernel(a, b), op.ref(a, b), 0, 0, std::string(op.name) + " " + what);
        test::expect_close(op.kernel(b, a), op.ref(b, a), 0, 0,
                           std::string(op.name) + " swapped " + what);
    }
}

Tensor rnd(const Shape& s, uint32_t seed) {
    return test::random_tensor(s, seed, 0.5f, 2.0f);
}

TEST(Elementwise, BroadcastShapes) {
    EXPECT_EQ(broadcast_shapes({2, 3}, {2, 3}), Shape({2, 3}));
    EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}), Shape({2, 3, 4}));
    EXPECT_EQ(broadcast_shapes({}, {5}), Shape({5}));
    EXPECT_EQ(broadcast_shapes({1}, {}), Shape({1}));
    EXPECT_EQ(broadcast_shapes({0, 3}, {1, 3}), Shape({0, 3}));
    EXPECT_EQ(broadcast_shapes({2, 320, 1, 1}, {2, 320, 64, 64}), Shape({2, 320, 64, 64}));
    EXPECT_THROW(broadcast_shapes({2, 3}, {4}), Error);
    EXPECT_THROW(broadcast_shapes({0}, {3}), Error);
}

TEST(Elementwise, SameShapeOddSizes) {
    for_each_isa([](Isa) {
        for (int64_t n : {1, 3, 7, 15, 16, 17, 33, 1000, 100003}) {
            check_all(rnd({n}, 1 + static_cast<uint32_t>(n)),
                      rnd({n}, 2 + static_cast<uint32_t>(n)), "n=" + std::to_string(n));
        }
        check_all(rnd({2, 3, 5, 7}, 3), rnd({2, 3, 5, 7}, 4), "4-d");
    });
}

TEST(Elementwise, ScalarOperands) {
    for_each_isa([](Isa) {
        Tensor a = rnd({3, 17}, 5);
        check_all(a, Tensor::full({}, 1.5f), "0-d scalar");
        check_all(a, Tensor::full({1}, -0.25f), "[1] scalar");
        check_all(a, Tensor::full({1, 1}, 3.0f), "[1, 1] scalar");
        check_all(Tensor::full({}, 2.0f), Tensor::full({}, 7.0f), "both 0-d");
    });
}

TEST(Elementwise, ChannelAndRowBroadcasts) {
    for_each_isa([](Isa) {
        for (int64_t hw : {1, 3, 17, 64}) {
            Tensor x = rnd({2, 5, hw, hw}, 7 + static_cast<uint32_t>(hw));
            check_all(x, rnd({5, 1, 1}, 8), "per-channel [C,1,1] hw=" + std::to_string(hw));
            check_all(x, rnd({2, 5, 1, 1}, 9), "per-sample-channel [B,C,1,1]");
            check_all(x, rnd({hw}, 10), "per-row [W]");
            check_all(x, rnd({1, 5, 1, hw}, 11), "[1,C,1,W]");
        }
        for (int64_t n : {1, 3, 15, 17, 33, 1000}) {
            check_all(rnd({7, n}, 12), rnd({n}, 13), "per-row n=" + std::to_string(n));
            check_all(rnd({7, n}, 14), rnd({7, 1}, 15), "per-column n=" + std::to_string(n));
        }
        check_all(rnd({3, 1}, 16), rnd({1, 4}, 17), "outer product");
        check_all(rnd({5}, 18), rnd({2, 3, 5}, 19), "rank mismatch");
        check_all(rnd({4, 1, 6}, 20), rnd({3, 1}, 21), "both broadcast");
    });
}

TEST(Elementwise, StridedAndExpandedOperands) {
    for_each_isa([](Isa) {
        Tensor a = rnd({3, 5, 17}, 22), b = rnd({3, 5, 17}, 23);
        check_all(test::non_contiguous_copy(a), b, "permuted a");
        check_all(test::non_contiguous_copy(a), test::non_contiguous_copy(b), "permuted both");
        check_all(a.narrow(2, 1, 15), b.narrow(2, 2, 15), "narrowed");
        check_all(a.transpose(0, 2), rnd({17, 5, 3}, 24), "transposed");
        // Stride-0 expand views as inputs, incl. both operands expanded.
        Tensor row = rnd({1, 17}, 25), col = rnd({9, 1}, 26);
        check_all(row.expand({9, 17}), rnd({9, 17}, 27), "expanded row");
        check_all(col.expand({9, 17}), rnd({9, 17}, 28), "expanded column");
        check_all(row.expand({9, 17}), col.expand({9, 17}), "both expanded");
        check_all(test::non_contiguous_copy(rnd({4, 6}, 29)), rnd({6}, 30), "strided + row");
        check_all(test::non_contiguous_copy(rnd({4, 6, 5}, 31)), rnd({6, 1}, 32),
                  "strided + channel");
    });
}

TEST(Elementwise, ScaleAndAddScalar) {
    for_each_isa([](Isa) {
        for (int64_t n : {1, 15, 17, 1000, 100003}) {
            Tensor x = rnd({n}, 33 + static_cast<uint32_t>(n));
            test::expect_close(scale(x, 0.18215f), ref::scale(x, 0.18215f), 0, 0, "scale");
            test::expect_close(add_scalar(x, -1.5f), ref::add_scalar(x, -1.5f), 0, 0, "add_scalar");
        }
        Tensor nc = test::non_contiguous_copy(rnd({4, 7, 3}, 34));
        test::expect_close(scale(nc, 3.0f), ref::scale(nc, 3.0f), 0, 0, "scale strided");
        test::expect_close(add_scalar(nc, 2.0f), ref::add_scalar(nc, 2.0f), 0, 0,
                           "add_scalar strided");
        Tensor ex = rnd({1, 5}, 35).expand({6, 5});
        test::expect_close(scale(ex, -2.0f), ref::scale(ex, -2.0f), 0, 0, "scale expanded");
    });
}

TEST(Elementwise, OperatorsAndKnownValues) {
    Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
    Tensor b = Tensor::from_vector({2}, {10, 20});
    EXPECT_EQ((a + b).to_vector(), (std::vector<float>{11, 22, 13, 24}));
    EXPECT_EQ((a - b).to_vector(), (std::vector<float>{-9, -18, -7, -16}));
    EXPECT_EQ((a * b).to_vector(), (std::vector<float>{10, 40, 30, 80}));
    EXPECT_EQ((b / a).to_vector(), (std::vector<float>{10, 10, 10.0f / 3.0f, 5}));
    EXPECT_EQ((a * 2.0f).to_vector(), (std::vector<float>{2, 4, 6, 8}));
    EXPECT_EQ((0.5f * a).to_vector(), (std::vector<float>{0.5f, 1, 1.5f, 2}));
    EXPECT_EQ((a + 1.0f).to_vector(), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Elementwise, SpecialValues) {
    const float inf = INFINITY, nan = NAN;
    Tensor a = Tensor::from_vector({6}, {1.0f, -1.0f, 0.0f, inf, nan, -0.0f});
    Tensor z = Tensor::from_vector({6}, {0.0f, 0.0f, 0.0f, inf, 1.0f, 0.0f});
    for_each_isa([&](Isa) { check_all(a, z, "special"); });
}

TEST(Elementwise, EmptyTensors) {
    for_each_isa([](Isa) {
        EXPECT_EQ(add(Tensor::zeros({0, 3}), Tensor::zeros({3})).shape(), Shape({0, 3}));
        EXPECT_EQ(scale(Tensor::zeros({2, 0}), 2.0f).shape(), Shape({2, 0}));
    });
}

TEST(Elementwise, RejectsBadInput) {
    try {
        add(Tensor::zeros({2, 3}), Tensor::zeros({4}));
        FAIL() << "no throw";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
    }
    EXPECT_THROW(mul(Tensor::zeros({2}, DType::F16), Tensor::zeros({2})), Error);
    EXPECT_THROW(sub(Tensor::zeros({2}), Tensor::zeros({2}, DType::I32)), Error);
    EXPECT_THROW(div(Tensor(), Tensor::zeros({2})), Error);
    EXPECT_THROW(scale(Tensor::zeros({2}, DType::BF16), 2.0f), Error);
    EXPECT_THROW(ref::add(Tensor::zeros({2, 3}), Tensor::zeros({4})), Error);
}

// add_scaled_into: a + s * b into a channel range of a buffer, in place over a, from a
// strided operand; partial overlap and wrong shapes are errors.
TEST(Elementwise, AddScaledInto) {
    Tensor a = rnd({1, 3, 5, 7}, 50), b = rnd({1, 3, 5, 7}, 51);
    const Tensor want = ref::add(a, ref::scale(b, 0.2f));
    Tensor buf = Tensor::zeros({1, 8, 5, 7});
    add_scaled_into(a, test::non_contiguous_copy(b), 0.2f, buf.narrow(1, 2, 3));
    test::expect_close(buf.narrow(1, 2, 3), want, 0, 0, "into a buffer");
    EXPECT_EQ(buf.narrow(1, 0, 2).to_vector(), std::vector<float>(70, 0.0f));
    EXPECT_EQ(buf.narrow(1, 5, 3).to_vector(), std::vector<float>(105, 0.0f));
    Tensor in_place = a.clone();
    add_scaled_into(in_place, b, 0.2f, in_place);
    test::expect_close(in_place, want, 0, 0, "in place");
    EXPECT_THROW(add_scaled_into(buf.narrow(1, 0, 3), b, 1.0f, buf.narrow(1, 1, 3)), Error);
    EXPECT_THROW(add_scaled_into(a, rnd({1, 3, 5, 6}, 52), 1.0f, Tensor::zeros({1, 3, 5, 7})),
                 Error);
    EXPECT_THROW(add_scaled_into(a, b, 1.0f, Tensor::zeros({1, 3, 7, 5})), Error);
}

TEST(Elementwise, Multithreaded) {
    set_num_threads(4);
    Tensor x = rnd({2, 64, 32, 32}, 40);  // 4 tasks of at least 32768 elements
    check_all(x, rnd({64, 1, 1}, 41), "4 threads per-channel");
    check_all(x, rnd({2, 64, 32, 32}, 42), "4 threads same shape");
    check_all(x, rnd({32}, 43), "4 threads per-row");
    set_num_threads(0);
}

}  // namespace
}  // namespace sd
