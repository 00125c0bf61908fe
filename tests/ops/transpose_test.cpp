// transpose (the gated delta rule's chunk layouts) at every instruction-set
// level against the definition, on shapes that are and are not whole 8 x 8
// blocks, with padding between rows that must stay untouched.

#include <gtest/gtest.h>

#include <vector>

#include "ops/transpose.h"
#include "ops_test_util.h"

namespace cria::ops {
namespace {

using test::random_floats;

TEST(Transpose, EveryLevelMatchesDefinition) {
    uint32_t seed = 1;
    for (cpu::Isa isa : test::runnable_isas())
        for (int64_t rows : {1, 7, 8, 9, 32, 45, 128})
            for (int64_t cols : {1, 3, 8, 16, 17, 64}) {
                SCOPED_TRACE(::testing::Message() << test::isa_label(isa) << " rows " << rows << " cols " << cols);
                const int64_t ld_src = rows + 5, ld_dst = cols + 3;
                const auto src = random_floats(static_cast<size_t>(cols * ld_src), seed++);
                auto dst = random_floats(static_cast<size_t>(rows * ld_dst), seed++);
                std::vector<float> expected = dst;
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t c = 0; c < cols; ++c) expected[r * ld_dst + c] = src[c * ld_src + r];
                transpose(Transpose{src.data(), ld_src, dst.data(), ld_dst, rows, cols}, isa);
                EXPECT_EQ(dst, expected);
            }
}

}  // namespace
}  // namespace cria::ops
