// concat, chunk, permute_copy, upsample_nearest2x, pad2d, timestep_embedding against the
// reference and against torch semantics. Tolerance: exact for every op that only moves
// values; timestep_embedding atol 1.2e-7 (cos / sin of the same f32 argument, <= 1 ulp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/shape_ops.h"
#include "tensor/half.h"
#include "test_util.h"

namespace sd {
namespace {

Tensor rnd(const Shape& s, uint32_t seed) {
    return test::random_tensor(s, seed, -10.0f, 10.0f);
}

// A tensor of another plain dtype with the values 0, 1, 2, ... (exact in f16 / bf16 / i32).
Tensor iota(const Shape& s, DType dtype) {
    Tensor t = Tensor::empty(s, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
        if (dtype == DType::I32) {
            t.data<int32_t>()[i] = static_cast<int32_t>(i);
        } else if (dtype == DType::F16) {
            t.data<uint16_t>()[i] = f32_to_f16(static_cast<float>(i % 2048));
        } else {
            t.data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(i % 256));
        }
    }
    return t;
}

TEST(Concat, MatchesReference) {
    for (int dim : {0, 1, 2, -1}) {
        std::vector<Tensor> ts;
        for (int i = 0; i < 3; ++i) {
            Shape s{2, 3, 5};
            s[(dim + 3) % 3] = 1 + 2 * i;
            ts.push_back(rnd(s, 1 + static_cast<uint32_t>(i)));
        }
        test::expect_close(concat(ts, dim), ref::concat(ts, dim), 0, 0,
                           "dim " + std::to_string(dim));
        for (Tensor& t : ts) t = test::non_contiguous_copy(t);
        test::expect_close(concat(ts, dim), ref::concat(ts, dim), 0, 0,
                           "strided dim " + std::to_string(dim));
    }
    // The UNet's skip connection: cat([h, skip], dim=1) with a permuted input.
    Tensor h = rnd({2, 64, 17, 9}, 4), skip = rnd({2, 9, 17, 32}, 5).permute({0, 3, 2, 1});
    test::expect_close(concat({h, skip}, 1), ref::concat({h, skip}, 1), 0, 0, "skip");
    Tensor ex = rnd({1, 3, 1}, 6).expand({4, 3, 5});
    test::expect_close(concat({ex, rnd({4, 3, 2}, 7)}, 2), ref::concat({ex, rnd({4, 3, 2}, 7)}, 2),
                       0, 0, "expanded");
    // An empty piece contributes nothing.
    test::expect_close(concat({rnd({2, 0}, 8), rnd({2, 3}, 9)}, 1), rnd({2, 3}, 9), 0, 0,
                       "empty piece");
}

TEST(Concat, OtherDtypes) {
    for (DType dt : {DType::F16, DType::BF16, DType::I32}) {
        std::vector<Tensor> ts = {iota({3, 4}, dt), iota({3, 7}, dt).narrow(1, 2, 5)};
        Tensor got = concat(ts, 1);
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_EQ(got.to_vector(), ref::concat(ts, 1).to_vector()) << dtype_name(dt);
        Tensor t = iota({5, 6}, dt).transpose(0, 1);
        EXPECT_EQ(concat({t, t}, 0).to_vector(), ref::concat({t, t}, 0).to_vector())
            << dtype_name(dt);
    }
}

TEST(Concat, RejectsBadInput) {
    EXPECT_THROW(concat({}, 0), Error);
    EXPECT_THROW(concat({rnd({2, 3}, 1), Tensor::zeros({2, 3}, DType::F16)}, 0), Error);
    EXPECT_THROW(concat({rnd({2, 3}, 1), rnd({2, 3, 1}, 2)}, 0), Error);
    EXPECT_THROW(concat({rnd({2, 3}, 1), rnd({2, 3}, 2)}, 2), Error);
    EXPECT_THROW(concat({rnd({2, 3}, 1), Tensor()}, 0), Error);
    EXPECT_THROW(concat({Tensor::zeros({2, 32}, DType::Q8_0)}, 0), Error);
    try {
        concat({rnd({2, 3}, 1), rnd({4, 5}, 2)}, 1);
        FAIL() << "no throw";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
    }
}

TEST(Chunk, AsTorch) {
    Tensor x = rnd({6, 4}, 1);
    std::vector<Tensor> c = chunk(x, 4, 0);  // ceil(6 / 4) = 2 per piece: 3 pieces
    ASSERT_EQ(c.size(), 3u);
    for (const Tensor& t : c) EXPECT_EQ(t.shape(), Shape({2, 4}));
    EXPECT_EQ(c[1].to_vector(), x.narrow(0, 2, 2).to_vector());
    EXPECT_EQ(c[1].storage(), x.storage());  // views
    c = chunk(rnd({5, 3}, 2), 2, 0);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].size(0), 3);
    EXPECT_EQ(c[1].size(0), 2);
    c = chunk(rnd({2, 10}, 3), 2, -1);  // GEGLU's halves
    EXPECT_EQ(c[0].shape(), Shape({2, 5}));
    EXPECT_EQ(c[1].to_vector(), rnd({2, 10}, 3).narrow(1, 5, 5).to_vector());
    c = chunk(Tensor::zeros({0, 3}), 3, 0);  // empty: `chunks` empty pieces
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[2].shape(), Shape({0, 3}));
    EXPECT_EQ(chunk(rnd({3}, 4), 7, 0).size(), 3u);
    EXPECT_THROW(chunk(x, 0, 0), Error);
    EXPECT_THROW(chunk(x, -1, 0), Error);
    EXPECT_THROW(chunk(x, 2, 2), Error);
}

TEST(PermuteCopy, MatchesStridedCopy) {
    const std::vector<std::vector<int>> orders = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 3, 1, 2},
                                                  {3, 2, 1, 0}, {1, 0, 2, 3}, {2, 0, 3, 1}};
    for (int threads : {1, 4}) {
        set_num_threads(threads);
        Tensor x = rnd({2, 33, 17, 40}, 5);
        for (const auto& o : orders) {
            test::expect_close(permute_copy(x, o), x.permute(o).contiguous(), 0, 0, "permute");
            Tensor nc = test::non_contiguous_copy(x);
            test::expect_close(permute_copy(nc, o), x.permute(o).contiguous(), 0, 0,
                               "permute strided");
            EXPECT_TRUE(permute_copy(x, o).is_contiguous());
        }
        // [B, C, HW] -> [B, HW, C], the transformer's layout change, and back.
        Tensor y = rnd({2, 320, 1024}, 6);
        test::expect_close(permute_copy(y, {0, 2, 1}), y.permute({0, 2, 1}).contiguous(), 0, 0,
                           "to tokens");
        Tensor z = rnd({1, 4096, 77}, 7);
        test::expect_close(permute_copy(z, {0, 2, 1}), z.permute({0, 2, 1}).contiguous(), 0, 0,
                           "to channels");
    }
    set_num_threads(0);
    Tensor h = iota({3, 5, 7}, DType::F16);
    EXPECT_EQ(permute_copy(h, {2, 0, 1}).to_vector(),
              h.permute({2, 0, 1}).contiguous().to_vector());
    EXPECT_THROW(permute_copy(rnd({2, 3}, 1), {0, 0}), Error);
    EXPECT_THROW(permute_copy(rnd({2, 3}, 1), {0}), Error);
}

TEST(PermuteCopy, QuantizedRows) {
    Tensor q = Tensor::empty({2, 3, 32}, DType::Q8_0);  // rows of one 34-byte block
    auto* bytes = static_cast<uint8_t*>(q.data_ptr());
    for (size_t i = 0; i < q.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    Tensor p = permute_copy(q, {1, 0, 2});
    ASSERT_EQ(p.shape(), Shape({3, 2, 32}));
    const auto* out = static_cast<const uint8_t*>(p.data_ptr());
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) {
            EXPECT_EQ(std::memcmp(out + (i * 2 + j) * 34, bytes + (j * 3 + i) * 34, 34), 0)
                << i << j;
        }
    }
}

TEST(Upsample, MatchesReference) {
    for (const Shape& s :
         {Shape{2, 3, 5, 7}, Shape{1, 1, 1, 1}, Shape{4, 17}, Shape{1, 320, 32, 33}}) {
        Tensor x = rnd(s, 8);
        test::expect_close(upsample_nearest2x(x), ref::upsample_nearest2x(x), 0, 0, s.to_string());
        test::expect_close(upsample_nearest2x(test::non_contiguous_copy(x)),
                           ref::upsample_nearest2x(x), 0, 0, s.to_string() + " strided");
    }
    Tensor x = Tensor::from_vector({1, 2, 2}, {1, 2, 3, 4});
    EXPECT_EQ(upsample_nearest2x(x).to_vector(),
              (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
    EXPECT_EQ(upsample_nearest2x(Tensor::zeros({2, 0, 3})).shape(), Shape({2, 0, 6}));
    EXPECT_THROW(upsample_nearest2x(rnd({5}, 1)), Error);
    EXPECT_THROW(upsample_nearest2x(Tensor::zeros({2, 2}, DType::F16)), Error);
}

TEST(Pad2d, MatchesReference) {
    struct P {
        int64_t l, r, t, b;
    };
    const P pads[] = {{0, 0, 0, 0},    {1, 1, 1, 1},   {0, 1, 0, 1},  {3, 0, 2, 5},
                      {-1, -2, 0, -3}, {2, -3, -1, 4}, {-7, 2, 1, 1}, {5, -9, 0, 0}};
    Tensor x = rnd({2, 3, 6, 7}, 9);
    for (const P& p : pads) {
        const std::string tag = std::to_string(p.l) + "," + std::to_string(p.r) + "," +
                                std::to_string(p.t) + "," + std::to_string(p.b);
        test::expect_close(pad2d(x, p.l, p.r, p.t, p.b, 0.5f),
                           ref::pad2d(x, p.l, p.r, p.t, p.b, 0.5f), 0, 0, tag);
        test::expect_close(pad2d(test::non_contiguous_copy(x), p.l, p.r, p.t, p.b),
                           ref::pad2d(x, p.l, p.r, p.t, p.b), 0, 0, tag + " strided");
    }
    // VAE's asymmetric downsampling pad (0, 1, 0, 1).
    Tensor y = Tensor::from_vector({1, 2, 2}, {1, 2, 3, 4});
    EXPECT_EQ(pad2d(y, 0, 1, 0, 1).to_vector(), (std::vector<float>{1, 2, 0, 3, 4, 0, 0, 0, 0}));
    EXPECT_EQ(pad2d(y, -1, 0, 0, -1).to_vector(), (std::vector<float>{2}));
    EXPECT_EQ(pad2d(y, -2, 0, 0, 0).shape(), Shape({1, 2, 0}));
    EXPECT_THROW(pad2d(y, -3, 0, 0, 0), Error);
    EXPECT_THROW(pad2d(rnd({4}, 1), 1, 1, 1, 1), Error);
}

TEST(TimestepEmbedding, MatchesReferenceAndClosedForm) {
    Tensor t = Tensor::from_vector({4}, {0.0f, 1.0f, 999.0f, 500.5f});
    for (int64_t dim : {320, 7, 1, 2, 1280}) {
        for (bool flip : {true, false}) {
            test::expect_close(timestep_embedding(t, dim, 10000.0f, flip),
                               ref::timestep_embedding(t, dim, 10000.0f, flip), 1.2e-7, 0,
                               "dim " + std::to_string(dim));
        }
    }
    std::vector<float> e = timestep_embedding(t, 320).to_vector();
    // Row 0 (t = 0): cos = 1 then sin = 0.
    for (int i = 0; i < 160; ++i) {
        EXPECT_EQ(e[i], 1.0f);
        EXPECT_EQ(e[160 + i], 0.0f);
    }
    // Row 1 (t = 1): cos(f_i), sin(f_i), f_i = 10000^(-i / 160).
    for (int i : {0, 1, 80, 159}) {
        const double f = std::pow(10000.0, -i / 160.0);
        EXPECT_NEAR(e[320 + i], std::cos(f), 2e-7);
        EXPECT_NEAR(e[320 + 160 + i], std::sin(f), 2e-7);
    }
    // flip_sin_to_cos = false puts sin first; an odd dim appends a zero column.
    std::vector<float> s = timestep_embedding(t, 7, 10000.0f, false).to_vector();
    EXPECT_NEAR(s[7 + 0], std::sin(1.0), 1e-7);
    EXPECT_NEAR(s[7 + 3], std::cos(1.0), 1e-7);
    EXPECT_EQ(s[7 + 6], 0.0f);
    test::expect_close(timestep_embedding(test::non_contiguous_copy(t), 64),
                       ref::timestep_embedding(t, 64), 1.2e-7, 0, "strided timesteps");
    EXPECT_THROW(timestep_embedding(Tensor::zeros({2, 2}), 8), Error);
    EXPECT_THROW(timestep_embedding(t, 0), Error);
    EXPECT_THROW(timestep_embedding(Tensor::zeros({2}, DType::I32), 8), Error);
}

// copy_into: a strided source into a channel range of a buffer, nothing else touched.
TEST(CopyInto, IntoAChannelRange) {
    Tensor src = rnd({1, 2, 3, 4}, 70);
    Tensor buf = Tensor::zeros({1, 5, 3, 4});
    copy_into(test::non_contiguous_copy(src), buf.narrow(1, 1, 2));
    EXPECT_EQ(buf.narrow(1, 1, 2).to_vector(), src.to_vector());
    EXPECT_EQ(buf.narrow(1, 0, 1).to_vector(), std::vector<float>(12, 0.0f));
    EXPECT_EQ(buf.narrow(1, 3, 2).to_vector(), std::vector<float>(24, 0.0f));
    EXPECT_THROW(copy_into(src, Tensor::zeros({1, 2, 4, 3})), Error);
    EXPECT_THROW(copy_into(buf.narrow(1, 0, 2), buf.narrow(1, 1, 2)), Error);
}

}  // namespace
}  // namespace sd
