// small_gemm (the gated delta rule's chunk products) at every instruction-set
// level against a double-precision product, on awkward shapes (columns that
// are not whole vectors, rows that are not whole tiles), strided rows, and
// with accumulation into a scaled C (one scale, one per column and one per
// row too), and A given as its transpose; and a row's result independent of
// its tile.

#include <gtest/gtest.h>

#include <vector>

#include "ops/small_gemm.h"
#include "ops_test_util.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::random_floats;

TEST(SmallGemm, EveryLevelMatchesDoubleProduct) {
    uint32_t seed = 1;
    for (cpu::Isa isa : test::runnable_isas())
        for (int64_t m : {1, 2, 3, 4, 5, 7, 13, 64})
            for (int64_t n : {1, 7, 16, 31, 32, 33, 48, 50, 80, 100, 128})
                for (int64_t k : {1, 5, 64, 129})
                    for (bool accumulate : {false, true})
                    for (bool transposed : {false, true})
                    for (bool col_scale : {false, true})
                    for (bool row_scale : {false, true}) {
                        SCOPED_TRACE(::testing::Message() << test::isa_label(isa) << " m " << m << " n " << n << " k "
                                                          << k << " accumulate " << accumulate << " a transposed "
                                                          << transposed << " column scales " << col_scale << " row scales " << row_scale);
                        // A transposed: k rows of m values, lda apart.
                        const int64_t lda = (transposed ? m : k) + 3, ldb = n + 5, ldc = n + 2;
                        const auto a = random_floats(static_cast<size_t>((transposed ? k : m) * lda), seed++);
                        const auto a_at = [&](int64_t i, int64_t p) {
                            return transposed ? a[p * lda + i] : a[i * lda + p];
                        };
                        const auto b = random_floats(static_cast<size_t>(k * ldb), seed++);
                        auto c = random_floats(static_cast<size_t>(m * ldc), seed++);
                        const auto scales = random_floats(static_cast<size_t>(n), seed++);
                        const auto row_scales = random_floats(static_cast<size_t>(m), seed++);
                        std::vector<float> expected = c;
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) {
                                double sum = accumulate ? 0.75 * (col_scale ? scales[j] : 1.0) *
                                                              (row_scale ? row_scales[i] : 1.0) * c[i * ldc + j]
                                                        : 0.0;
                                for (int64_t p = 0; p < k; ++p) sum += double(a_at(i, p)) * b[p * ldb + j];
                                expected[i * ldc + j] = static_cast<float>(sum);
                            }
                        SmallGemm g{a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k, accumulate, transposed, 0.75f,
                                    col_scale ? scales.data() : nullptr, row_scale ? row_scales.data() : nullptr};
                        small_gemm(g, isa);
                        // Every element, the padding between rows included (left untouched).
                        EXPECT_TRUE(all_close(c, expected, 1e-4 * static_cast<double>(k), 1e-5));
                    }
}

// A row of C does not depend on the rows computed with it nor on how many
// columns the product has (tiled attention relies on this for results that
// are bit-identical whatever its tile size): each row alone, and the first
// columns alone, equal the whole product bit for bit.
TEST(SmallGemm, RowsAndColumnsDoNotDependOnTheTile) {
    const int64_t m = 23, n = 100, k = 77;
    const auto a = random_floats(static_cast<size_t>(m * k), 11);
    const auto b = random_floats(static_cast<size_t>(k * n), 12);
    const auto c0 = random_floats(static_cast<size_t>(m * n), 13);
    for (cpu::Isa isa : test::runnable_isas())
        for (bool accumulate : {false, true}) {
            SCOPED_TRACE(::testing::Message() << test::isa_label(isa) << " accumulate " << accumulate);
            std::vector<float> whole = c0;
            small_gemm({a.data(), k, b.data(), n, whole.data(), n, m, n, k, accumulate}, isa);
            for (int64_t i = 0; i < m; ++i) {
                for (int64_t cols : {n, int64_t{40}, int64_t{17}}) {
                    std::vector<float> row(c0.begin() + i * n, c0.begin() + (i + 1) * n);
                    small_gemm({a.data() + i * k, k, b.data(), n, row.data(), n, 1, cols, k, accumulate}, isa);
                    for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(row[j], whole[i * n + j]) << "row " << i << " col " << j;
                }
            }
        }
}

}  // namespace
}  // namespace cria::ops
