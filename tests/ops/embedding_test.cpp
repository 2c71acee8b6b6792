#include "ops/embedding.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "ops/convert.h"
#include "test_util.h"

namespace sd {
namespace {

Tensor ids_of(const Shape& shape, std::vector<int32_t> values) {
    Tensor t = Tensor::empty(shape, DType::I32);
    for (size_t i = 0; i < values.size(); ++i) t.data<int32_t>()[i] = values[i];
    return t;
}

TEST(Embedding, GathersRowsOfEveryDtype) {
    Tensor w32 = test::random_tensor({37, 64}, 1);
    Tensor ids = ids_of({2, 3}, {0, 36, 5, 5, 17, 1});
    for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
        Tensor w = convert(w32, d);
        Tensor want = ref::embedding(w, ids);
        ASSERT_EQ(want.shape(), (Shape{2, 3, 64}));
        Tensor deq = convert(w, DType::F32);
        // The reference equals the dequantized row exactly.
        std::vector<float> row = deq.select(0, 36).to_vector();
        std::vector<float> got_row = want.select(0, 0).select(0, 1).to_vector();
        EXPECT_EQ(got_row, row) << dtype_name(d);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            // Exact: a gather plus the bit-exact dequantization.
            test::expect_close(embedding(w, ids), want, 0, 0,
                               std::string(dtype_name(d)) + " " + isa_name(isa));
        }
    }
}

TEST(Embedding, NonContiguousIdsAndErrors) {
    Tensor w = test::random_tensor({10, 8}, 2);
    Tensor ids = ids_of({2, 2}, {1, 2, 3, 4}).transpose(0, 1);
    test::expect_close(embedding(w, ids), ref::embedding(w, ids), 0, 0);
    EXPECT_THROW(embedding(w, ids_of({1}, {10})), Error);
    EXPECT_THROW(embedding(w, ids_of({1}, {-1})), Error);
    EXPECT_THROW(embedding(w, test::random_tensor({2}, 1)), Error);
    EXPECT_THROW(embedding(test::random_tensor({10}, 1), ids_of({1}, {0})), Error);
}

}  // namespace
}  // namespace sd
