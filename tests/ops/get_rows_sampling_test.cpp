// Row gather for every element type, argmax and top-k.
// get_rows must equal the quant module's dequantize_row (or the exact
// f16/bf16 conversion) bit for bit: it is a copy, not arithmetic.

#include <algorithm>
#include <cstring>
#include <vector>

#include "cria/core/float16.h"
#include "cria/quant/quantize.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::random_floats;
using GetRowsTest = test::OpsFixture;

TEST_P(GetRowsTest, EveryTypeMatchesDequantize) {
    const std::vector<ElementType> types{ElementType::F32,  ElementType::F16,  ElementType::BF16, ElementType::Q4_0,
                                         ElementType::Q4_1, ElementType::Q5_0, ElementType::Q5_1, ElementType::Q8_0,
                                         ElementType::Q2_K, ElementType::Q3_K, ElementType::Q4_K, ElementType::Q5_K,
                                         ElementType::Q6_K, ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4};
    for (ElementType type : types) {
        SCOPED_TRACE(element_type_name(type));
        const ElementTypeInfo* info = element_type_info(type);
        // Awkward sizes where the format allows: odd counts for plain types,
        // 1 and 3 blocks (and 1 and 3 super-blocks) for block types.
        std::vector<int64_t> widths;
        if (info->block_size == 1) {
            widths = {1, 7, 33, 257};
        } else {
            widths = {info->block_size, 3 * static_cast<int64_t>(info->block_size)};
        }
        for (int64_t n : widths) {
            SCOPED_TRACE(n);
            const int64_t rows = 9;
            const auto values = random_floats(static_cast<size_t>(n * rows), 40);
            const size_t row_bytes = *row_size_bytes(type, static_cast<uint64_t>(n));
            std::vector<uint8_t> table(row_bytes * static_cast<size_t>(rows));
            quant::quantize_rows(type, values.data(), table.data(), rows, n);
            const std::vector<int32_t> ids{8, 0, 3, 3, 7};
            std::vector<float> got(static_cast<size_t>(n) * ids.size(), -1.0f);
            ops_->get_rows(TensorView::contiguous(type, table.data(), {n, rows}), ids.data(), 5,
                           TensorView::contiguous(ElementType::F32, got.data(), {n, 5}));
            std::vector<float> want(static_cast<size_t>(n));
            for (size_t i = 0; i < ids.size(); ++i) {
                quant::dequantize_row(type, table.data() + row_bytes * static_cast<size_t>(ids[i]), want.data(), n);
                ASSERT_EQ(0, std::memcmp(got.data() + i * static_cast<size_t>(n), want.data(), want.size() * sizeof(float)))
                    << "row " << i;
            }
        }
    }
}

// convert writes cache rows: bytes identical to the reference conversion,
// including into a strided slice of a larger cache.
TEST_P(GetRowsTest, ConvertIntoCacheRows) {
    for (ElementType type : {ElementType::F32, ElementType::F16, ElementType::BF16, ElementType::Q8_0, ElementType::Q4_0}) {
        SCOPED_TRACE(element_type_name(type));
        const int64_t n = 96, rows = 6;
        const auto x = random_floats(static_cast<size_t>(n * rows), 42);
        const size_t row_bytes = *row_size_bytes(type, n);
        std::vector<uint8_t> got(row_bytes * 2 * rows, 0xAB), want = got;
        auto slice = [&](std::vector<uint8_t>& data) {
            auto v = TensorView::contiguous(type, data.data(), {n, rows});
            v.nb[1] = 2 * row_bytes;  // every other row of the cache
            v.nb[2] = v.nb[3] = v.nb[1] * rows;
            return v;
        };
        const auto vx = TensorView::contiguous(ElementType::F32, x.data(), {n, rows});
        ops_->convert(vx, slice(got));
        ref_.convert(vx, slice(want));
        EXPECT_EQ(got, want);
        EXPECT_EQ(got[row_bytes], 0xAB);  // the gap is untouched
    }
    std::vector<float> x(10);
    std::vector<uint8_t> q(64);
    EXPECT_THROW(ops_->convert(TensorView::contiguous(ElementType::F32, x.data(), {10}),
                               TensorView::contiguous(ElementType::F32, q.data(), {16})),
                 Error);
}

TEST_P(GetRowsTest, RejectsBadIds) {
    std::vector<float> table(12, 1.0f), out(4);
    const std::vector<int32_t> bad{3}, negative{-1};
    const auto vt = TensorView::contiguous(ElementType::F32, table.data(), {4, 3});
    const auto vo = TensorView::contiguous(ElementType::F32, out.data(), {4, 1});
    EXPECT_THROW(ops_->get_rows(vt, bad.data(), 1, vo), Error);
    EXPECT_THROW(ops_->get_rows(vt, negative.data(), 1, vo), Error);
}

TEST_P(GetRowsTest, ArgmaxAndTopK) {
    for (int64_t n : test::awkward_sizes()) {
        SCOPED_TRACE(n);
        auto x = random_floats(static_cast<size_t>(n), 41, -20.0f, 20.0f);
        if (n > 10) {
            x[5] = x[9] = 100.0f;  // a tie: the lower index wins
            x[2] = NAN;            // NaN never wins
        }
        const auto row = TensorView::contiguous(ElementType::F32, x.data(), {n});
        EXPECT_EQ(ops_->argmax(row), ref_.argmax(row));
        if (n > 10) {
            EXPECT_EQ(ops_->argmax(row), 5);
        }
        for (int64_t k : {int64_t{1}, int64_t{5}, int64_t{40}, n}) {
            const auto got = ops_->top_k(row, k);
            const auto want = ref_.top_k(row, k);
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < got.size(); ++i) {
                EXPECT_EQ(got[i].first, want[i].first) << "rank " << i;
            }
        }
    }
    std::vector<float> empty;
    EXPECT_THROW(ops_->argmax(TensorView::contiguous(ElementType::F32, empty.data(), {0})), Error);
}

CRIA_OPS_INSTANTIATE(GetRowsTest);

}  // namespace
}  // namespace cria::ops
