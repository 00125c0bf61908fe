// The decode split's stretch: front and back takes hand out every index of
// [begin, end) exactly once, in order from each end, alone or with two
// threads taking from both ends at once.

#include "matmul/stretch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace cria::matmul::detail {
namespace {

TEST(Stretch, FrontAndBackMeetWithoutOverlap) {
    Stretch s;
    s.reset(5, 11);
    EXPECT_EQ(s.take_front(), 5);
    EXPECT_EQ(s.take_back(), 10);
    EXPECT_EQ(s.take_back(), 9);
    EXPECT_EQ(s.take_front(), 6);
    EXPECT_EQ(s.take_front(), 7);
    EXPECT_EQ(s.take_back(), 8);
    EXPECT_EQ(s.take_front(), -1);
    EXPECT_EQ(s.take_back(), -1);
    s.reset(3, 3);  // empty
    EXPECT_EQ(s.take_front(), -1);
    EXPECT_EQ(s.take_back(), -1);
}

TEST(Stretch, TwoThreadsTakeEveryIndexOnce) {
    constexpr int64_t kBegin = 1000, kEnd = 201000;
    Stretch s;
    s.reset(kBegin, kEnd);
    std::vector<int64_t> front, back;
    std::thread helper([&] {
        for (int64_t t = s.take_back(); t >= 0; t = s.take_back()) back.push_back(t);
    });
    for (int64_t t = s.take_front(); t >= 0; t = s.take_front()) front.push_back(t);
    helper.join();
    // Each end in its own order, and together every index once.
    EXPECT_TRUE(std::is_sorted(front.begin(), front.end()));
    EXPECT_TRUE(std::is_sorted(back.rbegin(), back.rend()));
    std::vector<int64_t> all = front;
    all.insert(all.end(), back.begin(), back.end());
    std::sort(all.begin(), all.end());
    ASSERT_EQ(static_cast<int64_t>(all.size()), kEnd - kBegin);
    for (int64_t i = 0; i < kEnd - kBegin; ++i) ASSERT_EQ(all[static_cast<size_t>(i)], kBegin + i);
}

}  // namespace
}  // namespace cria::matmul::detail
