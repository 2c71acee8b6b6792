#include "tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "tensor/caching_allocator.h"
#include "tensor/half.h"
#include "test_util.h"

namespace sd {
namespace {

Tensor iota(const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    return Tensor::from_vector(shape, v);
}

TEST(Shape, BasicsAndLimits) {
    Shape s{2, 3, 4};
    EXPECT_EQ(s.size(), 3);
    EXPECT_EQ(s.numel(), 24);
    EXPECT_EQ(s.to_string(), "[2, 3, 4]");
    EXPECT_EQ(Shape{}.numel(), 1);
    EXPECT_THROW((Shape{1, 2, 3, 4, 5, 6}), Error);
}

TEST(Tensor, EmptyZerosFullFromVector) {
    Tensor z = Tensor::zeros({3, 5});
    EXPECT_TRUE(z.defined());
    EXPECT_TRUE(z.is_contiguous());
    EXPECT_EQ(z.nbytes(), 60u);
    for (float v : z.to_vector()) EXPECT_EQ(v, 0.0f);
    Tensor f = Tensor::full({2, 2}, 1.5f);
    for (float v : f.to_vector()) EXPECT_EQ(v, 1.5f);
    EXPECT_THROW(Tensor::from_vector({2, 2}, {1, 2, 3}), Error);
    EXPECT_THROW(Tensor::empty({-1, 2}), Error);
    EXPECT_FALSE(Tensor().defined());
    EXPECT_THROW(Tensor().data_ptr(), Error);
    // 64-bit overflow of the byte count is an error, not a wrap-around.
    EXPECT_THROW(Tensor::empty({1ll << 40, 1ll << 40}), Error);
}

TEST(Tensor, StridesAndViews) {
    Tensor t = iota({2, 3, 4});
    EXPECT_EQ(t.stride(0), 12);
    EXPECT_EQ(t.stride(-1), 1);
    Tensor v = t.view({6, -1});
    EXPECT_EQ(v.shape(), (Shape{6, 4}));
    EXPECT_THROW(t.view({5, -1}), Error);
    EXPECT_THROW(t.view({-1, -1}), Error);

    Tensor tr = t.transpose(0, 2);  // [4, 3, 2]
    EXPECT_FALSE(tr.is_contiguous());
    EXPECT_EQ(tr.shape(), (Shape{4, 3, 2}));
    // tr[a, b, c] == t[c, b, a]
    std::vector<float> vals = tr.to_vector();
    EXPECT_EQ(vals[0], 0.0f);
    EXPECT_EQ(vals[1], 12.0f);  // tr[0,0,1] = t[1,0,0]
    EXPECT_EQ(vals[2], 4.0f);   // tr[0,1,0] = t[0,1,0]
    EXPECT_THROW(tr.view({24}), Error);
    Tensor packed = tr.reshape({24});
    EXPECT_TRUE(packed.is_contiguous());
    EXPECT_EQ(packed.to_vector(), vals);

    Tensor n = t.narrow(2, 1, 2);  // [2, 3, 2]
    EXPECT_EQ(n.to_vector()[0], 1.0f);
    EXPECT_EQ(n.to_vector()[1], 2.0f);
    EXPECT_EQ(n.to_vector()[2], 5.0f);
    EXPECT_THROW(t.narrow(2, 3, 2), Error);

    Tensor s = t.select(1, -1);  // [2, 4] rows 8..11 and 20..23
    EXPECT_EQ(s.shape(), (Shape{2, 4}));
    EXPECT_EQ(s.to_vector()[4], 20.0f);
    EXPECT_THROW(t.select(1, 3), Error);

    EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 2, 3, 4}));
    EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
    EXPECT_EQ(t.unsqueeze(1).squeeze(1).shape(), t.shape());
    EXPECT_THROW(t.squeeze(0), Error);
    EXPECT_EQ(t.flatten(1).shape(), (Shape{2, 12}));
    EXPECT_EQ(t.permute({2, 0, 1}).shape(), (Shape{4, 2, 3}));
    EXPECT_THROW(t.permute({0, 0, 1}), Error);
    EXPECT_THROW(t.permute({0, 1}), Error);
    EXPECT_THROW(t.transpose(0, 3), Error);
}

TEST(Tensor, ExpandBroadcastsWithZeroStride) {
    Tensor row = iota({1, 3});
    Tensor e = row.expand({4, 3});
    EXPECT_EQ(e.stride(0), 0);
    std::vector<float> v = e.to_vector();
    EXPECT_EQ(v[9], 0.0f);
    EXPECT_EQ(v[11], 2.0f);
    EXPECT_EQ(row.expand({2, 4, 3}).shape(), (Shape{2, 4, 3}));
    EXPECT_THROW(iota({2, 3}).expand({4, 3}), Error);
}

TEST(Tensor, CloneAndContiguousCopyViews) {
    Tensor t = sd::test::random_tensor({3, 5, 7}, 1);
    Tensor nc = sd::test::non_contiguous_copy(t);
    EXPECT_FALSE(nc.is_contiguous());
    EXPECT_EQ(nc.to_vector(), t.to_vector());
    Tensor c = nc.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_EQ(c.to_vector(), t.to_vector());
    Tensor cl = t.clone();
    EXPECT_NE(cl.data_ptr(), t.data_ptr());
    EXPECT_EQ(t.contiguous().data_ptr(), t.data_ptr());
}

TEST(Tensor, HalfTypesRoundTrip) {
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                 // ties to even -> inf
    EXPECT_EQ(f32_to_f16(5.9604644775390625e-8f), 0x0001);   // smallest subnormal
    EXPECT_EQ(f32_to_f16(2.98023223876953125e-8f), 0x0000);  // half of it: ties to even
    EXPECT_EQ(f16_to_f32(0x0001), 5.9604644775390625e-8f);
    EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    // Every finite half converts to f32 and back unchanged.
    for (uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7c00) == 0x7c00) continue;
        ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << h;
    }
}

TEST(Tensor, QuantizedTensorsKeepWholeRows) {
    Tensor q = Tensor::empty({4, 64}, DType::Q8_0);
    EXPECT_EQ(q.nbytes(), 4u * 2 * 34);
    EXPECT_THROW(Tensor::empty({4, 40}, DType::Q8_0), Error);
    Tensor row = q.narrow(0, 1, 2);
    EXPECT_EQ(static_cast<uint8_t*>(row.data_ptr()) - static_cast<uint8_t*>(q.data_ptr()), 68);
    EXPECT_THROW(q.narrow(1, 0, 32), Error);
    EXPECT_THROW(q.transpose(0, 1), Error);
    EXPECT_THROW(q.data<float>(), Error);
    EXPECT_EQ(q.view({2, 2, 64}).shape(), (Shape{2, 2, 64}));
    EXPECT_THROW(q.view({16, 16}), Error);
    EXPECT_EQ(q.clone().nbytes(), q.nbytes());
}

TEST(Tensor, FromStorageChecksBounds) {
    auto storage = Storage::allocate(100);
    EXPECT_NO_THROW(Tensor::from_storage(storage, 0, {25}, DType::F32));
    EXPECT_THROW(Tensor::from_storage(storage, 4, {25}, DType::F32), Error);
    EXPECT_THROW(Tensor::from_storage(storage, 2, {2}, DType::F32), Error);  // misaligned
    EXPECT_THROW(Tensor::from_storage(nullptr, 0, {1}, DType::F32), Error);
}

// A zero dimension beside huge ones is a valid empty tensor (a file may declare one); its
// element count, strides and contiguity must not overflow (found by fuzz_gguf).
TEST(Tensor, EmptyTensorWithHugeDimensions) {
    const int64_t huge = int64_t{1} << 40;
    auto storage = Storage::allocate(16);
    Tensor t = Tensor::from_storage(storage, 0, {huge, huge, 0}, DType::F32);
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(t.nbytes(), 0u);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.contiguous().numel(), 0);
}

// Each live run's budget is its own share: the limit is their sum (caching_allocator_test.cpp).
TEST(CachingAllocator, BudgetsAddUp) {
    CachingAllocator& a = CachingAllocator::instance();
    const size_t base = a.cache_limit();
    {
        CacheBudget small(size_t{64} << 20);
        EXPECT_EQ(a.cache_limit(), size_t{64} << 20);
        {
            CacheBudget large(size_t{1} << 30);
            EXPECT_EQ(a.cache_limit(), (size_t{1} << 30) + (size_t{64} << 20));
            small.set(size_t{2} << 30);
            EXPECT_EQ(a.cache_limit(), size_t{3} << 30);
        }
        EXPECT_EQ(a.cache_limit(), size_t{2} << 30);
    }
    EXPECT_EQ(a.cache_limit(), base);
}

TEST(CachingAllocator, ReusesFreedBlocks) {
    CachingAllocator& a = CachingAllocator::instance();
    EXPECT_EQ(CachingAllocator::size_class(1), 64u);
    EXPECT_EQ(CachingAllocator::size_class(4096), 4096u);
    EXPECT_EQ(CachingAllocator::size_class(4097), 4608u);
    EXPECT_EQ(CachingAllocator::size_class(1 << 20), size_t{1} << 20);
    for (size_t b : {size_t{1}, size_t{5000}, size_t{123457}, size_t{1} << 24}) {
        EXPECT_GE(CachingAllocator::size_class(b), b);
        EXPECT_LE(CachingAllocator::size_class(b), b + b / 8 + 64);
    }
    size_t before = a.stats().bytes_in_use;
    void* p = a.allocate(1000000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_GE(a.stats().bytes_in_use, before + 1000000);
    a.deallocate(p, 1000000);
    EXPECT_EQ(a.stats().bytes_in_use, before);
#ifndef SD_SANITIZE_BUILD
    void* q = a.allocate(999999);  // same size class
    EXPECT_EQ(q, p);
    a.deallocate(q, 999999);
#endif
    a.trim();
    EXPECT_EQ(a.stats().bytes_cached, 0u);
}

// Large blocks are cached up to the limit only; past it a freed block goes back at once.
TEST(CachingAllocator, BoundsTheCacheOfLargeBlocks) {
    CachingAllocator& a = CachingAllocator::instance();
    a.trim();
    const size_t old_limit = a.cache_limit();
    const size_t mib = size_t{1} << 20;
    a.set_cache_limit(10 * mib);
    void* p = a.allocate(8 * mib);
    void* q = a.allocate(6 * mib);
    static_cast<char*>(p)[8 * mib - 1] = 1;  // the whole block is usable
    a.deallocate(p, 8 * mib);
#ifndef SD_SANITIZE_BUILD
    EXPECT_EQ(a.stats().bytes_cached_large, 8 * mib);
#endif
    a.deallocate(q, 6 * mib);  // 8 + 6 > 10: not kept
#ifndef SD_SANITIZE_BUILD
    EXPECT_EQ(a.stats().bytes_cached_large, 8 * mib);
    EXPECT_EQ(a.allocate(8 * mib), p);
    a.deallocate(p, 8 * mib);
#endif
    // A smaller large request reuses the cached 8 MiB block, which goes back as 8 MiB.
    void* r = a.allocate(5 * mib);
#ifndef SD_SANITIZE_BUILD
    EXPECT_EQ(r, p);
    EXPECT_EQ(a.stats().bytes_cached_large, 0u);
#endif
    a.deallocate(r, 5 * mib);
#ifndef SD_SANITIZE_BUILD
    EXPECT_EQ(a.stats().bytes_cached_large, 8 * mib);
    void* small = a.allocate(size_t{7} * mib / 2);  // under half its size: a new block
    EXPECT_NE(small, p);
    a.deallocate(small, size_t{7} * mib / 2);
#endif
    a.trim();
    EXPECT_EQ(a.stats().bytes_cached_large, 0u);
    a.set_cache_limit(old_limit);
}

}  // namespace
}  // namespace sd

namespace sd {
namespace {

TEST(Tensor, AsStridedChecksReach) {
    Tensor t = Tensor::from_vector({6}, {0, 1, 2, 3, 4, 5});
    Tensor v = t.as_strided({2, 2}, {1, 2}, 1);  // [[1, 3], [2, 4]]
    EXPECT_EQ(v.to_vector(), (std::vector<float>{1, 3, 2, 4}));
    EXPECT_THROW(t.as_strided({2, 3}, {3, 1}, 1), Error);
    EXPECT_THROW(t.as_strided({2}, {-1}, 0), Error);
    EXPECT_NO_THROW(t.as_strided({0, 3}, {3, 1}, 100));
    EXPECT_THROW(t.as_strided({2, 2}, {1}, 0), Error);
}

}  // namespace
}  // namespace sd
