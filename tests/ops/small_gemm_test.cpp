// small_gemm (the gated delta rule's chunk products) at every instruction-set
// level against a double-precision product, on awkward shapes (columns that
// are not whole vectors, rows that are not whole tiles), strided rows, and
// with accumulation into a scaled C (one scale, or one per column too), and
// A given as its transpose.

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
        for (int64_t m : {1, 3, 4, 7, 13, 64})
            for (int64_t n : {1, 7, 16, 31, 32, 33, 50, 128})
                for (int64_t k : {1, 5, 64, 129})
                    for (bool accumulate : {false, true})
                    for (bool transposed : {false, true})
                    for (bool col_scale : {false, true}) {
                        SCOPED_TRACE(::testing::Message() << test::isa_label(isa) << " m " << m << " n " << n << " k "
                                                          << k << " accumulate " << accumulate << " a transposed "
                                                          << transposed << " column scales " << col_scale);
                        // A transposed: k rows of m values, lda apart.
                        const int64_t lda = (transposed ? m : k) + 3, ldb = n + 5, ldc = n + 2;
                        const auto a = random_floats(static_cast<size_t>((transposed ? k : m) * lda), seed++);
                        const auto a_at = [&](int64_t i, int64_t p) {
                            return transposed ? a[p * lda + i] : a[i * lda + p];
                        };
                        const auto b = random_floats(static_cast<size_t>(k * ldb), seed++);
                        auto c = random_floats(static_cast<size_t>(m * ldc), seed++);
                        const auto scales = random_floats(static_cast<size_t>(n), seed++);
                        std::vector<float> expected = c;
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) {
                                double sum = accumulate ? 0.75 * (col_scale ? scales[j] : 1.0) * c[i * ldc + j] : 0.0;
                                for (int64_t p = 0; p < k; ++p) sum += double(a_at(i, p)) * b[p * ldb + j];
                                expected[i * ldc + j] = static_cast<float>(sum);
                            }
                        SmallGemm g{a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k, accumulate, transposed, 0.75f,
                                    col_scale ? scales.data() : nullptr};
                        small_gemm(g, isa);
                        // Every element, the padding between rows included (left untouched).
                        EXPECT_TRUE(all_close(c, expected, 1e-4 * static_cast<double>(k), 1e-5));
                    }
}

}  // namespace
}  // namespace cria::ops
