// sd::convert against ref::convert: every dtype pair through f32, strided and non-contiguous
// inputs, views of quantized tensors, long rows split across threads, and bad input.
//
// Tolerance: none. The kernel path must give the same bytes as the reference path (both
// quantize with the same row kernels and the fast dequantizers are bit-exact), on every
// ISA; comparisons of values read back allow only NaN == NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "ops/convert.h"
#include "tensor/quant.h"
#include "test_util.h"

namespace sd {
namespace {

std::vector<DType> every_dtype() {
    size_t count = 0;
    const DType* all = all_dtypes(&count);
    return std::vector<DType>(all, all + count);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.nbytes() != b.nbytes()) return false;
    return a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    std::vector<float> a = got.to_vector(), b = want.to_vector();
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) && std::isnan(b[i])) continue;
        ASSERT_EQ(a[i], b[i]) << what << " at flat index " << i;
    }
}

// Scaled so f16, bf16 and i32 all see a useful spread of values.
Tensor sample(const Shape& shape, uint32_t seed) {
    return test::random_tensor(shape, seed, -40.f, 40.f);
}

TEST(Convert, F32ToEveryDtypeMatchesReferenceOnEveryIsa) {
    Tensor x = sample({3, 5, 512}, 1);
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        Tensor want = ref::convert(x, t);
        Tensor want_back = ref::convert(want, DType::F32);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            Tensor q = convert(x, t);
            EXPECT_EQ(q.dtype(), t);
            EXPECT_TRUE(q.is_contiguous());
            EXPECT_TRUE(same_bytes(q, want)) << isa_name(isa);
            Tensor back = convert(q, DType::F32);
            EXPECT_TRUE(same_bytes(back, want_back)) << isa_name(isa);
        }
    }
}

TEST(Convert, EveryDtypePairGoesThroughF32) {
    Tensor x = sample({4, 256}, 2);
    for (DType from : every_dtype()) {
        Tensor src = ref::convert(x, from);
        for (DType to : every_dtype()) {
            SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
            Tensor got = convert(src, to);
            Tensor want = ref::convert(src, to);
            EXPECT_TRUE(same_bytes(got, want));
            if (from != to) {
                // Through f32, as documented.
                EXPECT_TRUE(same_bytes(want, ref::convert(ref::convert(src, DType::F32), to)));
            }
        }
    }
}

TEST(Convert, NonContiguousPlainInputs) {
    Tensor x = sample({6, 7, 256}, 3);
    Tensor nc = test::non_contiguous_copy(x);
    ASSERT_FALSE(nc.is_contiguous());
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        Tensor got = convert(nc, t);
        EXPECT_TRUE(got.is_contiguous());
        EXPECT_TRUE(same_bytes(got, convert(x, t)));
        EXPECT_TRUE(same_bytes(got, ref::convert(nc, t)));
    }
}

TEST(Convert, TransposedAndNarrowedHalfInputs) {
    Tensor x = sample({64, 96}, 4);
    for (DType plain : {DType::F16, DType::BF16, DType::I32}) {
        SCOPED_TRACE(dtype_name(plain));
        Tensor h = convert(x, plain);
        Tensor exact = convert(h, DType::F32);  // the values h holds
        // A transposed view: the innermost stride is not 1.
        Tensor ht = h.transpose(0, 1);
        expect_same_values(convert(ht, DType::F32), exact.transpose(0, 1), "transpose");
        EXPECT_TRUE(same_bytes(convert(ht, DType::Q8_0), ref::convert(ht, DType::Q8_0)));
        // A narrowed view with an offset.
        Tensor hn = h.narrow(0, 5, 20).narrow(1, 3, 64);
        expect_same_values(convert(hn, DType::F32), exact.narrow(0, 5, 20).narrow(1, 3, 64),
                           "narrow");
        EXPECT_TRUE(same_bytes(convert(hn, DType::Q4_0), ref::convert(hn, DType::Q4_0)));
    }
}

TEST(Convert, ViewsOfQuantizedTensors) {
    Tensor x = sample({4, 6, 256}, 5);
    for (DType t : every_dtype()) {
        if (!is_quantized(t)) continue;
        SCOPED_TRACE(dtype_name(t));
        Tensor q = convert(x, t);
        Tensor full = convert(q, DType::F32);
        // Rows 2..4 of every matrix, a selected matrix, and a transpose of outer dims.
        expect_same_values(convert(q.narrow(1, 2, 3), DType::F32), full.narrow(1, 2, 3), "narrow");
        expect_same_values(convert(q.select(0, 3), DType::F32), full.select(0, 3), "select");
        Tensor p = q.transpose(0, 1);
        expect_same_values(convert(p, DType::F32), full.transpose(0, 1), "transpose");
        EXPECT_TRUE(same_bytes(convert(p, DType::F16), ref::convert(p, DType::F16)));
    }
}

TEST(Convert, ManyRowsAndLongRowsSplitAcrossThreads) {
    // 333 rows, and one long row cut into pieces (longer than the 64Ki piece length).
    for (const Shape& shape : {Shape{333, 256}, Shape{256 * 301}, Shape{2, 256 * 257}}) {
        Tensor x = sample(shape, 6);
        for (DType t : {DType::F16, DType::Q4_0, DType::Q4_K, DType::Q6_K, DType::IQ4_XS}) {
            SCOPED_TRACE(std::string(dtype_name(t)) + " " + x.describe());
            Tensor q = convert(x, t);
            EXPECT_TRUE(same_bytes(q, ref::convert(x, t)));
            EXPECT_TRUE(same_bytes(convert(q, DType::F32), ref::convert(q, DType::F32)));
        }
    }
}

TEST(Convert, ResultDoesNotDependOnThreadCount) {
    Tensor x = sample({37, 512}, 7);
    Tensor want = convert(x, DType::Q5_K);
    const int saved = num_threads();
    for (int n : {1, 3}) {
        set_num_threads(n);
        EXPECT_TRUE(same_bytes(convert(x, DType::Q5_K), want)) << n << " threads";
    }
    set_num_threads(saved);
}

TEST(Convert, PlainToPlain) {
    Tensor x = Tensor::from_vector({6}, {0.5f, 1.5f, 2.5f, -2.5f, 1e-3f, 70000.f});
    Tensor i = convert(x, DType::I32);
    const int32_t* iv = i.data<int32_t>();
    EXPECT_EQ(std::vector<int32_t>(iv, iv + 6), (std::vector<int32_t>{0, 2, 2, -2, 0, 70000}));
    EXPECT_EQ(convert(i, DType::F32).to_vector(),
              (std::vector<float>{0.f, 2.f, 2.f, -2.f, 0.f, 70000.f}));
    Tensor h = convert(x, DType::F16);
    EXPECT_TRUE(std::isinf(convert(h, DType::F32).to_vector()[5]));  // beyond f16
    Tensor b = convert(h, DType::BF16);
    EXPECT_EQ(convert(b, DType::F32).to_vector()[0], 0.5f);
}

TEST(Convert, SameDtypeIsAPackedCopy) {
    Tensor x = sample({8, 64}, 8);
    Tensor t = x.transpose(0, 1);
    Tensor c = convert(t, DType::F32);
    EXPECT_TRUE(c.is_contiguous());
    expect_same_values(c, t, "copy");
    Tensor q = convert(x, DType::Q8_0);
    Tensor q2 = convert(q, DType::Q8_0);
    EXPECT_TRUE(same_bytes(q, q2));
    EXPECT_NE(q.data_ptr(), q2.data_ptr());
}

TEST(Convert, ScalarsAndEmptyTensors) {
    Tensor s = Tensor::full({}, 3.25f).view({});
    ASSERT_EQ(s.dim(), 0);
    Tensor h = convert(s, DType::F16);
    EXPECT_EQ(h.dim(), 0);
    EXPECT_EQ(convert(h, DType::F32).item(), 3.25f);
    EXPECT_THROW(convert(s, DType::Q8_0), Error);
    Tensor e = Tensor::zeros({0, 256});
    for (DType t : every_dtype()) {
        Tensor q = convert(e, t);
        EXPECT_EQ(q.shape(), e.shape());
        EXPECT_EQ(q.dtype(), t);
    }
}

TEST(Convert, BadInputThrowsWithAClearMessage) {
    Tensor x = Tensor::zeros({3, 100});
    try {
        convert(x, DType::Q4_0);
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[3, 100]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("q4_0"), std::string::npos) << msg;
    }
    EXPECT_THROW(ref::convert(x, DType::Q4_K), Error);
    EXPECT_THROW(convert(Tensor::zeros({2, 128}), DType::Q2_K), Error);
    EXPECT_THROW(convert(x, static_cast<DType>(5)), Error);
    EXPECT_THROW(ref::convert(x, static_cast<DType>(77)), Error);
    EXPECT_THROW(convert(Tensor(), DType::F16), Error);
    EXPECT_THROW(ref::convert(Tensor(), DType::F16), Error);
}

TEST(Convert, NonFiniteValuesSurvive) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> v(512, 1.f);
    v[1] = inf;
    v[2] = -inf;
    v[3] = std::numeric_limits<float>::quiet_NaN();
    Tensor x = Tensor::from_vector({2, 256}, v);
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        Tensor q;
        EXPECT_NO_THROW(q = convert(x, t));
        EXPECT_TRUE(same_bytes(q, ref::convert(x, t)));
        EXPECT_NO_THROW(convert(q, DType::F32));
    }
}

}  // namespace
}  // namespace sd
