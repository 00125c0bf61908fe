// Temperature, dynamic temperature and XTC.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/sampling/samplers.h"
#include "sampling_test_util.h"

namespace cria::sampling {
namespace {

using test::from_logits;
using test::from_probs;
using test::ids;
using test::kNegInf;
using test::logits_of;

TEST(Temperature, DividesLogits) {
    auto c = from_logits({1, 2, 3});
    make_temperature(0.5f)->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2, 4, 6}));
}

TEST(Temperature, ZeroOrNegativeKeepsOnlyTheFirstMaximum) {
    for (float t : {0.0f, -1.0f}) {
        auto c = from_logits({1, 3, 2, 3});
        make_temperature(t)->apply(c);
        EXPECT_EQ(logits_of(c), (std::vector<float>{kNegInf, 3, kNegInf, kNegInf}));
    }
}

TEST(DynamicTemperature, ZeroRangeIsPlainTemperature) {
    auto c = from_logits({1, 2, 3});
    make_temperature_ext(0.5f, 0.0f, 1.0f)->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2, 4, 6}));
}

TEST(DynamicTemperature, MapsNormalizedEntropyToTheRange) {
    // p = 0.25, 0.75: H = 0.25 ln 4 + 0.75 ln(4/3) = 0.346574 + 0.215762 = 0.562335
    // H_max = ln 2 = 0.693147 -> normalized 0.811278
    // temp 1, range 0.5 -> [0.5, 1.5]; exponent 1: T = 0.5 + 0.811278 = 1.311278
    // logits 0, ln 3 = 1.098612 -> 0, 0.837817; p = 1/(1+e^0.837817) = 0.302000, 0.698000
    auto c = from_probs({0.25f, 0.75f});
    make_temperature_ext(1.0f, 0.5f, 1.0f)->apply(c);
    EXPECT_NEAR(c[1].logit - c[0].logit, 0.837817f, 1e-5);
    EXPECT_NEAR(c[0].p, 0.302000f, 1e-5);
    EXPECT_NEAR(c[1].p, 0.698000f, 1e-5);

    // exponent 2: T = 0.5 + 0.811278^2 = 1.158172 -> logit gap 1.098612/1.158172 = 0.948574
    c = from_probs({0.25f, 0.75f});
    make_temperature_ext(1.0f, 0.5f, 2.0f)->apply(c);
    EXPECT_NEAR(c[1].logit - c[0].logit, 0.948574f, 1e-5);
}

TEST(DynamicTemperature, UniformDistributionGetsTheMaximumTemperature) {
    // normalized entropy 1 -> T = temp + range = 2: logits halve.
    auto c = from_logits({4, 4, 4, 4});
    make_temperature_ext(1.5f, 0.5f, 1.0f)->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{2, 2, 2, 2}));
    EXPECT_NEAR(c[0].p, 0.25f, 1e-7);
}

TEST(DynamicTemperature, SingleCandidateIsLeftAlone) {
    auto c = from_logits({4});
    make_temperature_ext(1.0f, 0.5f, 1.0f)->apply(c);
    EXPECT_EQ(logits_of(c), (std::vector<float>{4}));
}

TEST(Xtc, RemovesTopChoicesButTheLeastLikelyOfThem) {
    // p 0.4, 0.3, 0.2, 0.1; threshold 0.25: 0.4 and 0.3 qualify; 0.4 is removed.
    auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    make_xtc(1.0f, 0.25f, 1, 1)->apply(c);
    EXPECT_EQ(ids(c), (std::vector<TokenId>{1, 2, 3}));
}

TEST(Xtc, NothingWhenOnlyOneQualifies) {
    auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
    make_xtc(1.0f, 0.35f, 1, 1)->apply(c);
    EXPECT_EQ(c.size(), 4u);
}

TEST(Xtc, DisabledSettingsAndMinKeep) {
    for (auto& xtc : {make_xtc(0.0f, 0.1f, 1, 1), make_xtc(1.0f, 0.6f, 1, 1), make_xtc(1.0f, 0.25f, 4, 1)}) {
        auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
        xtc->apply(c);
        EXPECT_EQ(c.size(), 4u);
    }
}

TEST(Xtc, ActsWithTheGivenProbability) {
    // probability 0.3 on a fixed seed: the fraction of calls that remove
    // something is binomial(2000, 0.3): mean 600, sd 20.5; allow 5 sd.
    auto xtc = make_xtc(0.3f, 0.25f, 1, 1234);
    int removed = 0;
    for (int i = 0; i < 2000; ++i) {
        auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
        xtc->apply(c);
        removed += c.size() == 3 ? 1 : 0;
    }
    EXPECT_NEAR(removed, 600, 103);
    // reset restarts the random sequence: the same decisions again
    auto a = make_xtc(0.3f, 0.25f, 1, 99);
    std::vector<size_t> first;
    for (int i = 0; i < 50; ++i) {
        auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
        a->apply(c);
        first.push_back(c.size());
    }
    a->reset();
    for (int i = 0; i < 50; ++i) {
        auto c = from_probs({0.4f, 0.3f, 0.2f, 0.1f});
        a->apply(c);
        EXPECT_EQ(c.size(), first[static_cast<size_t>(i)]);
    }
}

}  // namespace
}  // namespace cria::sampling
