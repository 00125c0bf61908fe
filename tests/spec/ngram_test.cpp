// The n-gram drafters on hand-made histories.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/spec/ngram.h"

namespace cria::spec {
namespace {

using Tokens = std::vector<TokenId>;

Draft run(Drafter& d, const Tokens& history, TokenId last, int n_max) {
    Draft out;
    d.draft(history, last, n_max, out);
    return out;
}

TEST(NgramSimple, DraftsWhatFollowedTheLatestEarlierOccurrence) {
    NgramSimpleDrafter d({/*size_n=*/2, /*size_m=*/3, 1});
    // Key [7 8] (last history token 7, sampled 8). It occurs at 1 (followed by 1 2 3)
    // and at 6 (followed by 4 5 6): the latest wins.
    const Tokens history = {0, 7, 8, 1, 2, 3, 7, 8, 4, 5, 6, 9, 9, 7};
    const Draft out = run(d, history, 8, 16);
    EXPECT_EQ(out.tokens, (Tokens{4, 5, 6}));
    EXPECT_TRUE(out.probs.empty());
    EXPECT_EQ(run(d, history, 8, 2).tokens, (Tokens{4, 5}));  // n_max caps it
    EXPECT_TRUE(run(d, history, 42, 16).empty());              // no match
}

TEST(NgramSimple, NeedsEnoughHistory) {
    NgramSimpleDrafter d({2, 3, 1});
    EXPECT_TRUE(run(d, {7, 8, 1, 2, 7}, 8, 16).empty());
    EXPECT_THROW(NgramSimpleDrafter({0, 3, 1}), Error);
}

TEST(NgramMapK, LimitsADraftToWhatItsKeyHadAccepted) {
    NgramMapDrafter d({2, 3, 1}, /*key_only=*/true);
    EXPECT_EQ(d.name(), "ngram_map_k");
    const Tokens history = {0, 7, 8, 1, 2, 3, 5, 5, 5, 5, 7};
    d.begin(history);
    EXPECT_EQ(run(d, history, 8, 16).tokens, (Tokens{1, 2, 3}));
    // map-k does not record acceptance (as llama.cpp, its drafts are not "created").
    d.accept(1);
    EXPECT_EQ(run(d, history, 8, 16).tokens, (Tokens{1, 2, 3}));
}

TEST(NgramMapK4v, DraftsOnlyADominantContinuation) {
    NgramMapDrafter d({2, 2, /*min_hits=*/1}, /*key_only=*/false);
    EXPECT_EQ(d.name(), "ngram_map_k4v");
    // After [7 8]: [1 2] twice and [3 4] once: 2 < 3*1, no draft.
    Tokens history = {0, 7, 8, 1, 2, 7, 8, 3, 4, 7, 8, 1, 2, 9, 9, 9, 7};
    d.begin(history);
    EXPECT_TRUE(run(d, history, 8, 16).empty());
    // Mostly [1 2]: three more times, then it dominates (5 >= 3*1).
    NgramMapDrafter e({2, 2, 1}, false);
    history = {0, 7, 8, 1, 2, 7, 8, 1, 2, 7, 8, 3, 4, 7, 8, 1, 2, 7, 8, 1, 2, 9, 9, 7};
    e.begin(history);
    EXPECT_EQ(run(e, history, 8, 16).tokens, (Tokens{1, 2}));
    // The value remembers its acceptance and drafts no more next time.
    e.accept(1);
    EXPECT_EQ(run(e, history, 8, 16).tokens, (Tokens{1}));
}

TEST(NgramMapK4v, WaitsForMinHits) {
    NgramMapDrafter d({2, 2, /*min_hits=*/2}, false);
    const Tokens history = {0, 7, 8, 1, 2, 9, 9, 9, 7};
    d.begin(history);
    EXPECT_TRUE(run(d, history, 8, 16).empty());         // first hit of the key
    EXPECT_EQ(run(d, history, 8, 16).tokens, (Tokens{1, 2}));  // second hit
}

TEST(NgramMod, PoolHashesNGramsToTheirNextToken) {
    NgramModPool pool(3, 1024);
    const Tokens t = {5, 6, 7, 8, 5, 6, 7, 9};
    pool.add(t.data());  // 5 6 7 -> 8
    EXPECT_EQ(pool.get(t.data()), 8);
    pool.add(t.data() + 4 - 0 + 0);  // 5 6 7 -> 9 (same key, overwritten)
    EXPECT_EQ(pool.get(t.data()), 9);
    EXPECT_EQ(pool.used(), 1u);
    pool.reset();
    EXPECT_EQ(pool.get(t.data()), NgramModPool::kEmpty);
}

TEST(NgramMod, DraftsByWalkingThePool) {
    auto pool = std::make_shared<NgramModPool>(2, 4096);
    NgramModDrafter d({/*n_match=*/2, /*n_min=*/1, /*n_max=*/8}, pool);
    // The prompt teaches 1 2 -> 3 -> 4 -> 5 -> 6.
    const Tokens prompt = {1, 2, 3, 4, 5, 6, 0};
    d.begin(prompt);
    Tokens history = {9, 9, 1};
    EXPECT_EQ(run(d, history, 2, 8).tokens, (Tokens{3, 4, 5, 6, 0}));
    EXPECT_EQ(run(d, history, 2, 2).tokens, (Tokens{3, 4}));
    // n_min: a draft shorter than n_min is dropped.
    NgramModDrafter strict({2, 6, 8}, pool);
    EXPECT_TRUE(run(strict, history, 2, 8).empty());
    // A shared pool: another drafter sees what the first one learned.
    NgramModDrafter other({2, 1, 8}, pool);
    EXPECT_EQ(run(other, history, 2, 8).tokens, (Tokens{3, 4, 5, 6, 0}));
    EXPECT_THROW(NgramModDrafter({3, 1, 8}, pool), Error);
}

TEST(NgramMod, ResetsAfterThreePoorDrafts) {
    auto pool = std::make_shared<NgramModPool>(2, 4096);
    NgramModDrafter d({2, 1, 8}, pool);
    d.begin({1, 2, 3, 4, 5, 6});
    const Tokens history = {9, 1};
    for (int i = 0; i < 3; ++i) {
        ASSERT_FALSE(run(d, history, 2, 8).empty());
        d.accept(0);
    }
    EXPECT_TRUE(run(d, history, 2, 8).empty());
}

}  // namespace
}  // namespace cria::spec
