// PageBytes: the prompt cache's copies of saved states, large ones in their
// own mapping (given back whole when freed), small ones on the heap.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cria/server/page_bytes.h"

using cria::server::PageBytes;

namespace {

std::vector<uint8_t> counting(size_t n) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), uint8_t{3});
    return v;
}

TEST(PageBytes, CopiesSmallAndLargeStatesAndMovesThem) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{4097}, PageBytes::kMapFrom - 1, PageBytes::kMapFrom,
                           PageBytes::kMapFrom * 3 + 5}) {
        const std::vector<uint8_t> src = counting(n);
        PageBytes b(src);
        EXPECT_EQ(b.size(), n);
        EXPECT_EQ(b.mapped(), n >= PageBytes::kMapFrom) << n;
        EXPECT_TRUE(std::equal(src.begin(), src.end(), b.span().begin(), b.span().end())) << n;
        PageBytes moved(std::move(b));
        EXPECT_EQ(b.size(), 0u);
        EXPECT_EQ(b.data(), nullptr);
        EXPECT_EQ(moved.size(), n);
        PageBytes assigned(counting(PageBytes::kMapFrom + 1));  // replaced: its mapping is released
        assigned = std::move(moved);
        const std::span<const uint8_t> view = assigned;
        EXPECT_TRUE(std::equal(src.begin(), src.end(), view.begin(), view.end())) << n;
    }
}

}  // namespace
