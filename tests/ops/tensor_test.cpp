// TensorView geometry.

#include "cria/ops/tensor.h"

#include <gtest/gtest.h>

#include <vector>

#include "cria/core/error.h"

namespace cria::ops {
namespace {

TEST(TensorView, ContiguousStrides) {
    std::vector<float> data(7 * 3 * 2);
    const auto v = TensorView::contiguous(ElementType::F32, data.data(), {7, 3, 2});
    EXPECT_EQ(v.ne[0], 7);
    EXPECT_EQ(v.ne[3], 1);
    EXPECT_EQ(v.nb[0], 4u);
    EXPECT_EQ(v.nb[1], 28u);
    EXPECT_EQ(v.nb[2], 84u);
    EXPECT_EQ(v.n_rows(), 6);
    EXPECT_EQ(v.n_elements(), 42);
    EXPECT_TRUE(v.is_contiguous());
    EXPECT_EQ(v.row(2, 1), reinterpret_cast<char*>(data.data() + 7 * 5));
    EXPECT_EQ(v.row_at(5), v.row(2, 1));
}

TEST(TensorView, QuantisedRows) {
    std::vector<uint8_t> data(34 * 2 * 4);
    const auto v = TensorView::contiguous(ElementType::Q8_0, data.data(), {64, 4});
    EXPECT_EQ(v.nb[1], 68u);
    EXPECT_EQ(v.row_bytes(), 68u);
    EXPECT_TRUE(v.rows_are_packed());
    EXPECT_THROW(TensorView::contiguous(ElementType::Q8_0, data.data(), {33}), Error);
    EXPECT_THROW(TensorView::contiguous(ElementType::F32, data.data(), {1, 2, 3, 4, 5}), Error);
    EXPECT_THROW(TensorView::contiguous(ElementType::F32, data.data(), {-1}), Error);
}

TEST(TensorView, StridedViewIsNotContiguous) {
    std::vector<float> data(8 * 4);
    auto v = TensorView::contiguous(ElementType::F32, data.data(), {4, 4});
    v.nb[1] = 8 * sizeof(float);  // every other half-row of an 8-wide matrix
    EXPECT_FALSE(v.is_contiguous());
    EXPECT_TRUE(v.rows_are_packed());
    EXPECT_TRUE(same_shape(v, TensorView::contiguous(ElementType::F32, data.data(), {4, 4})));
}

}  // namespace
}  // namespace cria::ops
