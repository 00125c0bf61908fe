// Adaptive drafting on synthetic costs and outcomes: it must stop drafting
// where verification is as dear as decoding and drafts fail, draft long where
// verify batches are cheap and drafts succeed, and come back when they do.

#include <gtest/gtest.h>

#include "cria/spec/adaptive.h"

namespace cria::spec {
namespace {

// One simulated step: asks for a limit, "verifies" with the given cost per
// batch size and acceptance rule, and returns the draft length used.
struct Simulator {
    AdaptiveDrafting adaptive{1, true};
    double (*cost)(int);  // ms of a decode of k tokens
    int drafted = 0, steps = 0;

    double draft_ms = 0.0;  // what one draft call costs

    int step(int n_offered, int n_accepted_if_drafted) {
        ++steps;
        const int n = adaptive.limit(0, 16);
        const int d = std::min(n, n_offered);
        adaptive.observe_decode(d + 1, cost(d + 1));
        if (d == 0) {
            adaptive.observe_plain_step();
            return 0;
        }
        drafted += d;
        adaptive.observe_draft(0, d, std::min(d, n_accepted_if_drafted), draft_ms);
        return d;
    }
};

double compute_bound(int k) { return 1.0 * k; }            // k tokens cost k decodes
double memory_bound(int k) { return 1.0 + 0.02 * (k - 1); } // weights read once per batch

TEST(DecodeCostModel, InterpolatesAndExtrapolates) {
    DecodeCostModel m;
    EXPECT_EQ(m.cost(4), 0.0);
    m.observe(1, 10.0);
    EXPECT_DOUBLE_EQ(m.cost(4), 40.0);  // one point: pessimistic, linear
    m.observe(3, 14.0);
    EXPECT_DOUBLE_EQ(m.cost(2), 12.0);  // between measured sizes
    EXPECT_DOUBLE_EQ(m.cost(5), 18.0);  // slope of the two largest
    m.observe(3, 18.0);                 // moving average
    EXPECT_DOUBLE_EQ(m.cost(3), 15.0);
}

TEST(AdaptiveDrafting, FirstMeasuresAPlainStep) {
    AdaptiveDrafting a(1, true);
    EXPECT_EQ(a.limit(0, 8), 0);
    AdaptiveDrafting off(1, false);
    EXPECT_EQ(off.limit(0, 8), 8);  // disabled: whatever is allowed
}

TEST(AdaptiveDrafting, PausesWhereDraftsFailAndVerifyingIsDear) {
    Simulator s{.cost = compute_bound};
    for (int i = 0; i < 400; ++i) s.step(16, 0);  // every draft rejected
    // Only probes: a handful of one-token drafts over 400 steps.
    EXPECT_TRUE(s.adaptive.paused(0));
    EXPECT_LE(s.drafted, 15);
    EXPECT_GT(s.drafted, 0);  // but it did keep probing
}

TEST(AdaptiveDrafting, DraftsLongWhereVerifyingIsCheapAndDraftsHold) {
    Simulator s{.cost = memory_bound};
    int last = 0;
    for (int i = 0; i < 60; ++i) last = s.step(16, 16);
    EXPECT_FALSE(s.adaptive.paused(0));
    EXPECT_GE(last, 12);
}

TEST(AdaptiveDrafting, EvenCheapVerifyDoesNotPayWithoutAcceptance) {
    Simulator s{.cost = memory_bound};
    for (int i = 0; i < 200; ++i) s.step(16, 0);
    EXPECT_TRUE(s.adaptive.paused(0));
}

TEST(AdaptiveDrafting, ResumesWhenTheTextStartsToRepeat) {
    Simulator s{.cost = memory_bound};
    for (int i = 0; i < 100; ++i) s.step(16, 0);
    ASSERT_TRUE(s.adaptive.paused(0));
    int last = 0;
    for (int i = 0; i < 100; ++i) last = s.step(16, 16);
    EXPECT_FALSE(s.adaptive.paused(0));
    EXPECT_GE(last, 12);
}

TEST(AdaptiveDrafting, ModerateAcceptanceOnADearTargetStaysPaused) {
    // The austen-7m/austen-1m case: about half the first tokens accepted, a
    // verify of k tokens nearly k times a decode: drafting never pays.
    Simulator s{.cost = [](int k) { return 0.3 + 0.7 * k; }};
    int accepted_pattern = 0;
    for (int i = 0; i < 300; ++i) s.step(5, (accepted_pattern++ % 2));
    EXPECT_TRUE(s.adaptive.paused(0));
    EXPECT_LE(s.drafted, 20);
}

TEST(AdaptiveDrafting, DearFailingDrafterIsProbedRarely) {
    // A draft model that costs two plain decodes per call and never wins: its
    // probes may take at most ~2% of the time, so far fewer than a free
    // drafter's (which are probed every 64 steps at most).
    Simulator cheap{.cost = compute_bound};
    Simulator dear{.cost = compute_bound, .draft_ms = 2.0};
    for (int i = 0; i < 2000; ++i) {
        cheap.step(16, 0);
        dear.step(16, 0);
    }
    EXPECT_GE(cheap.drafted, 2000 / 64);
    EXPECT_LE(dear.drafted, 2000 / 100);
    EXPECT_GT(dear.drafted, 0);  // it still probes
    // Probe time: (2 + 1) ms per failed probe over 2000 ms of plain decoding.
    EXPECT_LE(dear.drafted * 3.0, 0.05 * 2000);
}

}  // namespace
}  // namespace cria::spec
