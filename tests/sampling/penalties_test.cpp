// Logit bias and repetition / frequency / presence penalties.

#include <gtest/gtest.h>

#include <algorithm>

#include "cria/sampling/samplers.h"
#include "sampling_test_util.h"

namespace cria::sampling {
namespace {

using test::from_logits;
using test::kNegInf;
using test::logit_of;
using test::logits_of;

TEST(LogitBias, AddsBiasesAndBans) {
    auto c = from_logits({0, 0, 0, 0});
    make_logit_bias({{1, 1.5f}, {3, kNegInf}, {7, 2.0f}})->apply(c);  // 7 is not a candidate
    EXPECT_EQ(logits_of(c), (std::vector<float>{0, 1.5f, 0, kNegInf}));
}

TEST(LogitBias, FindsTokensInReorderedCandidates) {
    auto c = from_logits({0, 1, 2, 3});
    std::reverse(c.begin(), c.end());  // ids 3 2 1 0: no token sits at its own index
    make_logit_bias({{1, 1.5f}, {3, -1.0f}, {3, -1.0f}})->apply(c);
    EXPECT_FLOAT_EQ(logit_of(c, 1), 2.5f);
    EXPECT_FLOAT_EQ(logit_of(c, 3), 1.0f);  // duplicates add up
    EXPECT_FLOAT_EQ(logit_of(c, 0), 0.0f);
    EXPECT_FLOAT_EQ(logit_of(c, 2), 2.0f);
}

// History 0, 1, 1, 3 with repeat 2, freq 0.5, present 0.25 on logits 2, -1, 0.5, 3:
//   token 0 (seen once):  2 > 0  -> 2 / 2 = 1     -> 1 - (1*0.5 + 0.25)   = 0.25
//   token 1 (seen twice): -1 <= 0 -> -1 * 2 = -2  -> -2 - (2*0.5 + 0.25)  = -3.25
//   token 2 (unseen): 0.5
//   token 3 (seen once):  3 / 2 = 1.5              -> 1.5 - 0.75           = 0.75
TEST(Penalties, RepeatFrequencyPresence) {
    auto penalties = make_penalties(64, 2.0f, 0.5f, 0.25f);
    for (TokenId t : {0, 1, 1, 3}) {
        penalties->accept(t);
    }
    auto c = from_logits({2, -1, 0.5f, 3});
    penalties->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{0.25f, -3.25f, 0.5f, 0.75f}));
}

TEST(Penalties, OnlyTheLastNTokensCount) {
    // last_n = 3: the window is 1, 1, 3; token 0 fell out and is not penalised.
    auto penalties = make_penalties(3, 2.0f, 0.5f, 0.25f);
    for (TokenId t : {0, 1, 1, 3}) {
        penalties->accept(t);
    }
    auto c = from_logits({2, -1, 0.5f, 3});
    penalties->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2.0f, -3.25f, 0.5f, 0.75f}));
}

TEST(Penalties, WorksOnReorderedCandidates) {
    auto penalties = make_penalties(64, 2.0f, 0.5f, 0.25f);
    for (TokenId t : {0, 1, 1, 3}) {
        penalties->accept(t);
    }
    auto c = from_logits({2, -1, 0.5f, 3});
    std::reverse(c.begin(), c.end());
    penalties->apply(c);
    EXPECT_FLOAT_EQ(logit_of(c, 0), 0.25f);
    EXPECT_FLOAT_EQ(logit_of(c, 1), -3.25f);
    EXPECT_FLOAT_EQ(logit_of(c, 2), 0.5f);
    EXPECT_FLOAT_EQ(logit_of(c, 3), 0.75f);
}

TEST(Penalties, LastNZeroAndNeutralValuesDisable) {
    for (auto& penalties : {make_penalties(0, 2.0f, 0.5f, 0.25f), make_penalties(64, 1.0f, 0.0f, 0.0f),
                            make_penalties(-1, 2.0f, 0.5f, 0.25f)}) {  // -1 unresolved clamps to 0, as llama.cpp
        penalties->accept(0);
        auto c = from_logits({2, -1});
        penalties->apply(c);
        EXPECT_EQ(logits_of(c), (std::vector<float>{2, -1}));
    }
}

TEST(Penalties, ResetForgetsAndCloneKeepsHistory) {
    auto penalties = make_penalties(64, 2.0f, 0.0f, 0.0f);
    penalties->accept(0);
    auto copy = penalties->clone();
    penalties->reset();
    auto c = from_logits({2, 2});
    penalties->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2, 2}));
    c = from_logits({2, 2});
    copy->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{1, 2}));
    // the clone keeps counting correctly when the window slides
    auto small = make_penalties(1, 2.0f, 0.0f, 0.0f);
    small->accept(0);
    auto small_copy = small->clone();
    small_copy->accept(1);  // pushes 0 out of the window
    c = from_logits({2, 2});
    small_copy->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2, 1}));
}

}  // namespace
}  // namespace cria::sampling
