// greedy and dist: choices, edge cases, seeded determinism, frequencies.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cria/core/error.h"
#include "cria/sampling/chain.h"
#include "cria/sampling/rng.h"
#include "cria/sampling/samplers.h"
#include "sampling_test_util.h"

namespace cria::sampling {
namespace {

using test::from_logits;
using test::kNegInf;

TEST(Rng, UniformsAreBuiltFromMt19937Bits) {
    // The engine output is fixed by the standard (10000th value of the
    // default seed 5489 is 4123659995); our uniforms are defined on its bits.
    Rng rng(5489);
    std::mt19937 reference(5489);
    const uint32_t a = reference();
    const uint32_t b = reference();
    EXPECT_EQ(a, 3499211612u);
    const double expected = ((a >> 5) * 67108864.0 + (b >> 6)) / 9007199254740992.0;
    EXPECT_EQ(rng.uniform_double(), expected);
    EXPECT_EQ(rng.uniform_float(), static_cast<float>(reference() >> 8) / 16777216.0f);
    std::mt19937 engine(5489);
    engine.discard(9999);
    EXPECT_EQ(engine(), 4123659995u);
}

TEST(Rng, RandomSeedIsResolved) {
    Rng rng(kRandomSeed);
    EXPECT_EQ(rng.seed(), kRandomSeed);
    Rng fixed(7);
    EXPECT_EQ(fixed.seed_in_use(), 7u);
}

TEST(Greedy, PicksTheFirstHighestLogit) {
    auto c = from_logits({1, 5, 5, 2});
    make_greedy()->apply(c);
    EXPECT_EQ(c.selected(), 1);
    EXPECT_EQ(c.selected_token(), 1);
}

TEST(Greedy, NaNIsNeverSelected) {
    auto c = from_logits({NAN, 1.0f, NAN});
    make_greedy()->apply(c);
    EXPECT_EQ(c.selected_token(), 1);
}

TEST(Selection, AllBannedThrows) {
    for (auto& s : {make_greedy(), make_dist(1)}) {
        auto c = from_logits({kNegInf, kNegInf, NAN});
        EXPECT_THROW(s->apply(c), Error);
        auto one = from_logits({NAN});
        EXPECT_THROW(s->apply(one), Error);
    }
}

TEST(Dist, SingleCandidateAndNormalisedProbabilities) {
    auto c = from_logits({3.0f});
    make_dist(1)->apply(c);
    EXPECT_EQ(c.selected(), 0);
    EXPECT_EQ(c[0].p, 1.0f);

    c = test::from_probs({0.1f, 0.2f, 0.3f, 0.4f});
    make_dist(1)->apply(c);
    EXPECT_NEAR(c[0].p, 0.1f, 1e-6);
    EXPECT_NEAR(c[3].p, 0.4f, 1e-6);
}

TEST(Dist, NaNAndMinusInfinityAreNeverSelected) {
    auto dist = make_dist(42);
    for (int i = 0; i < 2000; ++i) {
        auto c = from_logits({NAN, 0.0f, kNegInf, 0.0f, NAN});
        dist->apply(c);
        const TokenId t = c.selected_token();
        ASSERT_TRUE(t == 1 || t == 3) << t;
    }
}

std::vector<TokenId> draw_sequence(uint32_t seed, int n) {
    Chain chain;
    chain.add(make_dist(seed));
    std::vector<float> logits = {0.0f, 0.5f, 1.0f, -0.5f, 0.25f, 2.0f, 1.5f, -1.0f};
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) {
        out.push_back(chain.sample(logits));
    }
    return out;
}

TEST(Dist, SameSeedSameSequenceDifferentSeedDifferentSequence) {
    const auto a = draw_sequence(1234, 200);
    EXPECT_EQ(a, draw_sequence(1234, 200));
    EXPECT_NE(a, draw_sequence(1235, 200));
}

TEST(Dist, ResetRestartsAndCloneContinues) {
    Chain chain;
    chain.add(make_dist(77));
    std::vector<float> logits = {0.0f, 0.5f, 1.0f, -0.5f};
    std::vector<TokenId> first;
    for (int i = 0; i < 30; ++i) {
        first.push_back(chain.sample(logits));
    }
    Chain copy = chain.copy();
    std::vector<TokenId> next_a;
    std::vector<TokenId> next_b;
    for (int i = 0; i < 30; ++i) {
        next_a.push_back(chain.sample(logits));
        next_b.push_back(copy.sample(logits));
    }
    EXPECT_EQ(next_a, next_b);
    chain.reset();
    for (int i = 0; i < 30; ++i) {
        EXPECT_EQ(chain.sample(logits), first[static_cast<size_t>(i)]);
    }
}

// Pearson chi-square of observed counts against expected probabilities.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
    double chi2 = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        const double e = probs[i] * n;
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    return chi2;
}

TEST(Dist, FrequenciesMatchProbabilities) {
    // p = 0.5, 0.25, 0.125, 0.0625, 0.0625 ; 40000 draws on a fixed seed.
    // chi-square with 4 degrees of freedom: P(chi2 > 18.47) = 0.001.
    const std::vector<double> probs = {0.5, 0.25, 0.125, 0.0625, 0.0625};
    std::vector<float> logits;
    for (double p : probs) {
        logits.push_back(static_cast<float>(std::log(p)));
    }
    Chain chain;
    chain.add(make_dist(2024));
    const int n = 40000;
    std::vector<int> counts(probs.size(), 0);
    for (int i = 0; i < n; ++i) {
        ++counts[static_cast<size_t>(chain.sample(logits))];
    }
    EXPECT_LT(chi_square(counts, probs, n), 18.47);

    // and a wrong expectation is rejected by the same statistic
    const std::vector<double> wrong = {0.45, 0.3, 0.125, 0.0625, 0.0625};
    EXPECT_GT(chi_square(counts, wrong, n), 18.47);
}

}  // namespace
}  // namespace cria::sampling
