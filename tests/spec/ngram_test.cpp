// The n-gram drafters on hand-made histories.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/spec/ngram.h"

namespace cria::spec {
namespace {

using Tokens = std::vector<TokenId>;

Draft run(Drafter& d, const Tokens& history, TokenId last, int n_max) {
    Draft out;
    d.draft(DraftInput{history, last, static_cast<int32_t>(history.size())}, n_max, out);
    return out;
}

void begin(Drafter& d, const Tokens& prompt) {
    const sampling::SamplingParams greedy;
    d.begin(BeginInput{prompt, greedy});
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
    begin(d, history);
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
    begin(d, history);
    EXPECT_TRUE(run(d, history, 8, 16).empty());
    // Mostly [1 2]: three more times, then it dominates (5 >= 3*1).
    NgramMapDrafter e({2, 2, 1}, false);
    history = {0, 7, 8, 1, 2, 7, 8, 1, 2, 7, 8, 3, 4, 7, 8, 1, 2, 7, 8, 1, 2, 9, 9, 7};
    begin(e, history);
    EXPECT_EQ(run(e, history, 8, 16).tokens, (Tokens{1, 2}));
    // The value remembers its acceptance and drafts no more next time.
    e.accept(1);
    EXPECT_EQ(run(e, history, 8, 16).tokens, (Tokens{1}));
}

TEST(NgramMapK4v, WaitsForMinHits) {
    NgramMapDrafter d({2, 2, /*min_hits=*/2}, false);
    const Tokens history = {0, 7, 8, 1, 2, 9, 9, 9, 7};
    begin(d, history);
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
    begin(d, prompt);
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
    begin(d, Tokens{1, 2, 3, 4, 5, 6});
    const Tokens history = {9, 1};
    for (int i = 0; i < 3; ++i) {
        ASSERT_FALSE(run(d, history, 2, 8).empty());
        d.accept(0);
    }
    EXPECT_TRUE(run(d, history, 2, 8).empty());
}

}  // namespace
}  // namespace cria::spec

#include <fstream>

#include "cria/spec/ngram_cache.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

TEST(NgramCache, DraftsTheDominantContinuationFromTheContext) {
    NgramCacheDrafter d({/*n_draft=*/4, "", ""});
    begin(d, Tokens{});
    // 5 -> 6 -> 7 -> 8 seen twice, then 5 and 1 once each after 8: a tie,
    // which goes to the smaller token id.
    const std::vector<TokenId> history = {5, 6, 7, 8, 5, 6, 7, 8, 1};
    Draft out;
    out = run(d, history, 5, 4);
    EXPECT_EQ(out.tokens, (std::vector<TokenId>{6, 7, 8, 1}));
    out.clear();
    out = run(d, history, 5, 2);
    EXPECT_EQ(out.tokens.size(), 2u);
    // Nothing known after 9.
    out.clear();
    out = run(d, {1, 2, 3}, 9, 4);
    EXPECT_TRUE(out.empty());
}

TEST(NgramCache, UndecidedStatisticsDoNotDraft) {
    NgramCacheDrafter d({4, "", ""});
    begin(d, Tokens{});
    // After 5: 6 once, 7 once (50% < 66% for 1-grams); no longer context repeats.
    Draft out;
    out = run(d, {5, 6, 1, 5, 7, 2}, 5, 4);
    EXPECT_TRUE(out.empty());
}

TEST(NgramCache, TablesRoundTripThroughFilesAndRejectBadOnes) {
    NgramTable t;
    ngram_table_update(t, 1, 4, {1, 2, 3, 1, 2, 4}, 6);
    EXPECT_EQ(t.at(NgramKey{{1, 2, -1, -1}}).at(3), 1);
    EXPECT_EQ(t.at(NgramKey{{1, 2, -1, -1}}).at(4), 1);
    const auto path = (test::temp_dir() / "lookup.bin").string();
    ngram_table_save(t, path);
    EXPECT_EQ(ngram_table_load(path), t);

    // Dynamic statistics: loaded, merged with a request's, saved.
    NgramCacheDrafter d({4, "", path});
    begin(d, Tokens{});
    Draft out;
    out = run(d, {1, 2, 9}, 1, 4);
    d.end();
    EXPECT_EQ(ngram_table_load(path).at(NgramKey{{2, -1, -1, -1}}).size(), 3u);  // 3, 4 and 9 after 2

    std::ofstream(path, std::ios::binary | std::ios::trunc).write("\x01\x00\x00\x00\x02", 5);
    EXPECT_THROW(ngram_table_load(path), Error);
    EXPECT_THROW(ngram_table_load(path + ".missing"), Error);
    std::ofstream bad(path, std::ios::binary | std::ios::trunc);
    const int32_t record[] = {1, -1, -1, -1, 0};  // an n-gram with no entries
    bad.write(reinterpret_cast<const char*>(record), sizeof record);
    bad.close();
    EXPECT_THROW(ngram_table_load(path), Error);
}

}  // namespace
}  // namespace cria::spec

// Image positions (history entries < 0, spec/text_positions.h) are gaps: no
// n-gram drafter matches, learns or drafts an n-gram that holds one.
namespace cria::spec {
namespace {

constexpr TokenId kImage = -7;  // an image's placeholder, as the server and cria run write them

TEST(NgramImageGaps, SimpleAndMapStopTheirDraftBeforeAnImage) {
    // [7 8] was followed by 1 2, then an image, then 3.
    const Tokens history = {0, 7, 8, 1, 2, kImage, kImage, 3, 4, 5, 6, 6, 6, 7};
    NgramSimpleDrafter simple({2, 4, 1});
    EXPECT_EQ(run(simple, history, 8, 16).tokens, (Tokens{1, 2}));
    // Fewer than n tokens before the image: nothing, as when the history ends there.
    NgramSimpleDrafter simple3({3, 4, 1});
    const Tokens h3 = {0, 6, 7, 8, 1, 2, kImage, 3, 4, 5, 6, 6, 6, 6, 6, 6, 7};
    EXPECT_TRUE(run(simple3, h3, 8, 16).empty());
    NgramMapDrafter map_k({2, 4, 1}, true);
    begin(map_k, history);
    EXPECT_EQ(run(map_k, history, 8, 16).tokens, (Tokens{1, 2}));
    for (const TokenId t : run(map_k, history, 8, 16).tokens) EXPECT_GE(t, 0);
}

TEST(NgramImageGaps, AKeyWithAnImagePositionMatchesNothing) {
    // The same image twice, each followed by 1 2 3: the key [image 9]... never matches.
    const Tokens history = {0, kImage, 9, 1, 2, 3, 4, 4, 4, 4, 5, kImage};
    NgramSimpleDrafter simple({2, 3, 1});
    EXPECT_TRUE(run(simple, history, 9, 16).empty());
    NgramMapDrafter map_k({2, 3, 1}, true);
    begin(map_k, history);
    EXPECT_TRUE(run(map_k, history, 9, 16).empty());
    // The same history with a text token there drafts: the gap alone stopped it.
    Tokens text = history;
    text[1] = text[11] = 42;
    EXPECT_EQ(run(simple, text, 9, 16).tokens, (Tokens{1, 2, 3}));
}

TEST(NgramImageGaps, ModPoolLearnsNothingAcrossAnImage) {
    NgramModPool pool(2, 4096);
    const Tokens t = {1, 2, kImage, 4, 1, kImage, 5};
    pool.add(t.data());      // 1 2 -> image: not learnt
    pool.add(t.data() + 3);  // 4 1 -> image: not learnt
    pool.add(t.data() + 1);  // 2 image -> 4: not learnt
    EXPECT_EQ(pool.get(t.data()), NgramModPool::kEmpty);
    EXPECT_EQ(pool.get(t.data() + 3), NgramModPool::kEmpty);
    EXPECT_EQ(pool.get(t.data() + 1), NgramModPool::kEmpty);
    auto shared = std::make_shared<NgramModPool>(2, 4096);
    NgramModDrafter d({2, 1, 8}, shared);
    begin(d, Tokens{1, 2, 3, kImage, 1, 2, 3});
    EXPECT_EQ(run(d, Tokens{9, 1}, 2, 8).tokens, (Tokens{3}));  // 2 3 -> image was not learnt
    EXPECT_TRUE(run(d, Tokens{9, kImage}, 1, 8).empty());        // a key with the image
}

TEST(NgramImageGaps, CacheCountsNoNGramWithAnImagePosition) {
    NgramTable t;
    ngram_table_update(t, 1, 4, {5, kImage, 6, 5, kImage, 6}, 6);
    for (const auto& [key, counts] : t) {
        for (TokenId k : key.tokens) EXPECT_NE(k, kImage);
        for (const auto& [token, c] : counts) EXPECT_GE(token, 0);
    }
    EXPECT_FALSE(t.empty());  // [6 5] -> ... and 1-grams of text were counted
    NgramCacheDrafter d({4, "", ""});
    begin(d, Tokens{});
    const Draft out = run(d, {5, kImage, 5, kImage, 5, kImage}, 5, 4);
    for (TokenId tok : out.tokens) EXPECT_GE(tok, 0);
    EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace cria::spec
