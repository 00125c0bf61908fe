// top-k, top-p, min-p, typical and top-n-sigma on hand-made distributions.
// Inputs use logit = ln(p) so the softmax gives the p's back exactly.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cria/sampling/samplers.h"
#include "sampling_test_util.h"

namespace cria::sampling {
namespace {

using test::from_logits;
using test::from_probs;
using test::ids;
using test::kNegInf;

TEST(TopK, KeepsTheKMostLikelyInOrder) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_k(3)->apply(c);
    // ids by descending p: 3 (0.4), 2 (0.3), 1 (0.2)
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2, 1}));
    EXPECT_TRUE(c.sorted());
}

TEST(TopK, KOfOneIsGreedy) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_k(1)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3}));
}

TEST(TopK, KLargerThanNKeepsAllSorted) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_k(5)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2, 1, 0}));
}

TEST(TopK, ZeroOrNegativeDisables) {
    for (int k : {0, -1}) {
        auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
        make_top_k(k)->apply(c);
        EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1, 2, 3}));
        EXPECT_FALSE(c.sorted());
    }
}

TEST(TopK, EqualLogitsBreakTiesByLowerId) {
    auto c = from_logits({1, 1, 1, 1, 1});
    make_top_k(2)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1}));
}

TEST(TopK, LargeRandomRowMatchesFullSort) {
    // 5000 candidates, k both below and above the heap/nth_element switch.
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(5000);
    for (float& l : logits) {
        l = std::round(normal(gen) * 4.0f) / 4.0f;  // many ties on purpose
    }
    for (int k : {1, 40, 128, 129, 1000, 4999}) {
        auto c = from_logits(logits);
        make_top_k(k)->apply(c);
        std::vector<Candidate> all;
        for (size_t i = 0; i < logits.size(); ++i) {
            all.push_back({static_cast<TokenId>(i), logits[i], 0});
        }
        std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
            return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
        });
        ASSERT_EQ(c.size(), static_cast<size_t>(k));
        for (int i = 0; i < k; ++i) {
            ASSERT_EQ(c[i].id, all[i].id) << "k=" << k << " i=" << i;
        }
    }
}

TEST(TopP, KeepsTheSmallestPrefixReachingP) {
    // sorted p: 0.4, 0.3, 0.2, 0.1; running sums 0.4, 0.7, 0.9, 1.0
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_p(0.65f)->apply(c);  // 0.4 < 0.65 <= 0.7: two survive
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2}));
    EXPECT_NEAR(c[0].p, 0.4f, 1e-6);  // p are the pre-truncation softmax
    EXPECT_NEAR(c[1].p, 0.3f, 1e-6);

    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_p(0.75f)->apply(c);  // 0.7 < 0.75 <= 0.9: three survive
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2, 1}));
}

TEST(TopP, ZeroKeepsOneAndOneDisables) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_p(0.0f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3}));

    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_p(1.0f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1, 2, 3}));  // untouched, not even sorted
}

TEST(TopP, MinKeepWins) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_p(0.0f, 3)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2, 1}));
}

TEST(TopP, FlatLargeRowNeedsMoreThanTheFirst256) {
    // 2000 equal candidates: p = 0.5 needs 1000 of them, beyond the first
    // partial sort of 256, so the fallback full sort is exercised.
    auto c = from_logits(std::vector<float>(2000, 0.0f));
    make_top_p(0.5f)->apply(c);
    ASSERT_NEAR(static_cast<double>(c.size()), 1000.0, 2.0);
    for (size_t i = 0; i < c.size(); ++i) {
        ASSERT_EQ(c[i].id, static_cast<TokenId>(i));  // ties by id
    }
}

TEST(MinP, KeepsCandidatesWithinAFactorOfTheBest) {
    // p_max = 0.4. min_p 0.76 -> bar 0.304: only 0.4. min_p 0.74 -> bar 0.296: 0.4, 0.3.
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_min_p(0.76f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3}));

    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_min_p(0.74f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{2, 3}));  // unsorted input keeps its order

    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_min_p(0.45f)->apply(c);  // bar 0.18
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3}));
}

TEST(MinP, SortedInputAndMinKeep) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_top_k(4)->apply(c);  // sorted: 3, 2, 1, 0
    make_min_p(0.74f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2}));

    c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_min_p(0.76f, 3)->apply(c);  // only one passes, min_keep forces three (sorted)
    EXPECT_EQ(ids(c), (std::vector<TokenId>{3, 2, 1}));
}

TEST(MinP, ZeroDisables) {
    auto c = from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_min_p(0.0f)->apply(c);
    EXPECT_EQ(c.size(), 4u);
}

TEST(Typical, PeakedDistributionKeepsThePeak) {
    // H = -(0.97 ln 0.97 + 3 * 0.01 ln 0.01) = 0.02955 + 0.13816 = 0.1677
    // |-ln p - H|: 0.97 -> |0.0305 - 0.1677| = 0.137; 0.01 -> |4.605 - 0.168| = 4.44
    // 0.97 comes first and alone exceeds 0.5.
    auto c = from_probs({0.97f, 0.01f, 0.01f, 0.01f});
    make_typical(0.5f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{0}));
}

TEST(Typical, FlatterDistributionKeepsTheTypicalOnes) {
    // H = 0.4*0.9163 + 0.6*1.6094 = 1.3322
    // |-ln p - H|: 0.4 -> 0.416; 0.2 -> 0.277, so the three 0.2's come first:
    // running sum 0.2, 0.4, 0.6 > 0.5 -> those three.
    auto c = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
    make_typical(0.5f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3}));
    EXPECT_FALSE(c.sorted());
}

TEST(Typical, BannedCandidatesDoNotPoisonTheEntropy) {
    // The same 0.4 / 0.2 / 0.2 / 0.2 case with a banned token added: same survivors.
    std::vector<float> logits = {std::log(0.4f), std::log(0.2f), std::log(0.2f), std::log(0.2f), kNegInf};
    auto c = from_logits(logits);
    make_typical(0.5f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3}));
    c = from_logits(logits);
    make_typical(0.99f)->apply(c);  // running sum 0.2, 0.4, 0.6, 1.0 > 0.99: the four live ones
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3, 0}));
}

TEST(Typical, OneDisables) {
    auto c = from_probs({0.4f, 0.2f, 0.2f, 0.2f});
    make_typical(1.0f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1, 2, 3}));
}

TEST(TopNSigma, MasksLogitsBelowMaxMinusNSigma) {
    // logits 1, 2, 3, 4: mean 2.5, sigma = sqrt((2.25+0.25+0.25+2.25)/4) = 1.1180
    // n = 1: cut 2.882 -> 3 and 4 survive; p = softmax(3, 4) = 0.2689, 0.7311
    auto c = from_logits({1, 2, 3, 4});
    make_top_n_sigma(1.0f)->apply(c);
    ASSERT_EQ(c.size(), 4u);  // masked candidates stay, at -inf, p = 0
    EXPECT_EQ(c[0].id, 3);
    EXPECT_EQ(c[1].id, 2);
    EXPECT_NEAR(c[0].p, 0.7311f, 1e-4);
    EXPECT_NEAR(c[1].p, 0.2689f, 1e-4);
    EXPECT_EQ(c[2].logit, kNegInf);
    EXPECT_EQ(c[3].logit, kNegInf);
    EXPECT_EQ(c[2].p, 0.0f);

    // n = 2: cut 4 - 2.236 = 1.764 -> 2, 3, 4 survive
    c = from_logits({1, 2, 3, 4});
    make_top_n_sigma(2.0f)->apply(c);
    EXPECT_EQ(c[2].id, 1);
    EXPECT_GT(c[2].p, 0.0f);
    EXPECT_EQ(c[3].logit, kNegInf);
}

TEST(TopNSigma, IgnoresMinusInfinityInTheStatistics) {
    auto c = from_logits({kNegInf, 1, 2, 3, 4});  // same statistics as above
    make_top_n_sigma(1.0f)->apply(c);
    EXPECT_EQ(c[0].id, 4);
    EXPECT_EQ(c[1].id, 3);
    EXPECT_EQ(c[2].logit, kNegInf);
}

TEST(TopNSigma, DisabledAndSingleCandidate) {
    auto c = from_logits({1, 2, 3, 4});
    make_top_n_sigma(-1.0f)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{0, 1, 2, 3}));
    c = from_logits({5});
    make_top_n_sigma(1.0f)->apply(c);
    EXPECT_EQ(c.size(), 1u);
}

TEST(Truncation, SingleCandidateSurvivesEverything) {
    for (auto make : {+[] { return make_top_k(1); }, +[] { return make_top_p(0.1f); },
                      +[] { return make_min_p(0.9f); }, +[] { return make_typical(0.1f); }}) {
        auto c = from_logits({0.5f});
        make()->apply(c);
        EXPECT_EQ(ids(c), (std::vector<TokenId>{0}));
    }
}

TEST(Truncation, MinusInfinityNeverOutranksFiniteLogits) {
    auto c = from_logits({kNegInf, 0.0f, kNegInf, -1.0f});
    make_top_k(2)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3}));
    c = from_logits({kNegInf, 0.0f, kNegInf, -1.0f});
    make_min_p(0.01f)->apply(c);  // bar ln 0.01 = -4.6: 1 and 3
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 3}));
}

}  // namespace
}  // namespace cria::sampling
