// Mirostat v1 and v2: truncation and the mu update.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/sampling/mirostat.h"
#include "cria/sampling/samplers.h"
#include "sampling_test_util.h"

namespace cria::sampling {
namespace {

using test::from_probs;

TEST(MirostatV2, TruncatesBySurpriseAndUpdatesMu) {
    // tau 1 -> mu 2. Surprises -log2 p: 1, 2, 3, 3. Keep surprise <= 2:
    // 0.5 and 0.25, renormalised to 2/3 and 1/3.
    // Picking token 0: surprise log2(1.5) = 0.584963 -> mu = 2 - 0.5*(0.584963 - 1) = 2.207519
    // Picking token 1: surprise log2(3)   = 1.584963 -> mu = 2 - 0.5*(1.584963 - 1) = 1.707519
    int seen0 = 0;
    int seen1 = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
        MirostatV2 m(seed, 1.0f, 0.5f);
        EXPECT_FLOAT_EQ(m.mu(), 2.0f);
        auto c = from_probs({0.5f, 0.25f, 0.125f, 0.125f});
        m.apply(c);
        ASSERT_EQ(c.size(), 2u);
        EXPECT_NEAR(c[0].p, 2.0f / 3.0f, 1e-6);
        EXPECT_NEAR(c[1].p, 1.0f / 3.0f, 1e-6);
        if (c.selected_token() == 0) {
            EXPECT_NEAR(m.mu(), 2.207519f, 1e-5);
            ++seen0;
        } else {
            EXPECT_EQ(c.selected_token(), 1);
            EXPECT_NEAR(m.mu(), 1.707519f, 1e-5);
            ++seen1;
        }
    }
    EXPECT_GT(seen0, 0);
    EXPECT_GT(seen1, 0);
}

TEST(MirostatV2, KeepsTheBestWhenNothingIsBelowMu) {
    // tau 0.25 -> mu 0.5 < every surprise: only the best stays, p = 1,
    // surprise 0 -> mu = 0.5 - 0.1*(0 - 0.25) = 0.525
    MirostatV2 m(3, 0.25f, 0.1f);
    auto c = from_probs({0.125f, 0.5f, 0.25f, 0.125f});
    m.apply(c);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c.selected_token(), 1);
    EXPECT_NEAR(m.mu(), 0.525f, 1e-6);
    m.reset();
    EXPECT_FLOAT_EQ(m.mu(), 0.5f);
}

TEST(MirostatV1, EstimatesZipfExponentAndTruncates) {
    // p_i proportional to (i+1)^-2 over 4 tokens: every log-ratio b_i is
    // 2 t_i, so s_hat = 2, epsilon = 1. tau 1 -> mu 2:
    // k = (1 * 2^2 / (1 - 4^-1))^(1/2) = (5.3333)^(1/2) = 2.309 -> top 2,
    // renormalised: 1 and 1/4 -> 0.8, 0.2.
    // Picking 0: surprise -log2 0.8 = 0.321928 -> mu = 2 - 0.1*(0.321928 - 1) = 2.067807
    // Picking 1: surprise log2 5   = 2.321928 -> mu = 2 - 0.1*(2.321928 - 1) = 1.867807
    const float z = 1.0f + 0.25f + 1.0f / 9.0f + 0.0625f;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        Mirostat m(4, seed, 1.0f, 0.1f, 100);
        auto c = from_probs({1.0f / 9.0f / z, 1.0f / z, 0.0625f / z, 0.25f / z});  // shuffled ids
        m.apply(c);
        ASSERT_EQ(c.size(), 2u);
        EXPECT_EQ(c[0].id, 1);
        EXPECT_EQ(c[1].id, 3);
        EXPECT_NEAR(c[0].p, 0.8f, 1e-5);
        EXPECT_NEAR(c[1].p, 0.2f, 1e-5);
        const float expected_mu = c.selected_token() == 1 ? 2.067807f : 1.867807f;
        EXPECT_NEAR(m.mu(), expected_mu, 1e-4);
    }
}

TEST(MirostatV1, SingleCandidate) {
    Mirostat m(10, 1, 5.0f, 0.1f, 100);
    auto c = from_probs({1.0f});
    m.apply(c);
    EXPECT_EQ(c.selected_token(), 0);
    EXPECT_NEAR(m.mu(), 10.0f - 0.1f * (0.0f - 5.0f), 1e-5);
}

TEST(Mirostat, SeededRunsRepeatAndCloneKeepsMu) {
    auto run = [](Sampler& s) {
        std::vector<TokenId> out;
        for (int i = 0; i < 50; ++i) {
            auto c = from_probs({0.3f, 0.25f, 0.2f, 0.1f, 0.08f, 0.04f, 0.03f});
            s.apply(c);
            out.push_back(c.selected_token());
        }
        return out;
    };
    auto a = make_mirostat_v2(5, 2.0f, 0.1f);
    auto b = make_mirostat_v2(5, 2.0f, 0.1f);
    EXPECT_EQ(run(*a), run(*b));
    auto clone = a->clone();
    EXPECT_FLOAT_EQ(dynamic_cast<MirostatV2&>(*clone).mu(), dynamic_cast<MirostatV2&>(*a).mu());
    EXPECT_EQ(run(*clone), run(*a));

    auto v1a = make_mirostat(7, 5, 3.0f, 0.1f);
    auto v1b = make_mirostat(7, 5, 3.0f, 0.1f);
    EXPECT_EQ(run(*v1a), run(*v1b));
}

}  // namespace
}  // namespace cria::sampling
