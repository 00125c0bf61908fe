// The prompt cache (--cache-ram): the LRU store itself, and the scheduler
// reusing a prompt that one slot let go on another slot, with the output
// the request gets without any cache.
#include <gtest/gtest.h>

#include "cria/server/prompt_cache.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

std::vector<uint8_t> state_of(size_t n) { return std::vector<uint8_t>(n, 7); }

TEST(PromptCache, KeepsTheLongestPrefixAndEvictsTheLeastRecentlyUsed) {
    PromptCache cache(300);
    EXPECT_TRUE(cache.insert({1, 2, 3}, state_of(100)));
    EXPECT_TRUE(cache.insert({4, 5}, state_of(100)));
    EXPECT_EQ(cache.bytes(), 200u);
    // Longest shared prefix, and only when longer than asked.
    auto m = cache.best_match(std::vector<TokenId>{1, 2, 9}, 0);
    ASSERT_NE(m.entry, nullptr);
    EXPECT_EQ(m.entry->tokens, (std::vector<TokenId>{1, 2, 3}));
    EXPECT_EQ(m.n_common, 2u);
    EXPECT_EQ(cache.best_match(std::vector<TokenId>{1, 2, 9}, 2).entry, nullptr);
    EXPECT_EQ(cache.best_match(std::vector<TokenId>{8}, 0).entry, nullptr);
    // {1,2,3} was just used: {4,5} is the least recently used and goes for a third entry.
    EXPECT_TRUE(cache.insert({6}, state_of(150)));
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.best_match(std::vector<TokenId>{4, 5}, 0).entry, nullptr);
    EXPECT_NE(cache.best_match(std::vector<TokenId>{1, 2, 3}, 0).entry, nullptr);
    EXPECT_EQ(cache.bytes(), 250u);
}

TEST(PromptCache, APrefixOfAKeptPromptAddsNothingAndALongerOneReplacesIt) {
    PromptCache cache(1000);
    EXPECT_TRUE(cache.insert({1, 2, 3}, state_of(10)));
    EXPECT_FALSE(cache.would_keep(std::vector<TokenId>{1, 2}, 0));
    EXPECT_FALSE(cache.insert({1, 2}, state_of(10)));
    EXPECT_FALSE(cache.insert({1, 2, 3}, state_of(10)));
    EXPECT_TRUE(cache.insert({1, 2, 3, 4}, state_of(20)));  // extends {1,2,3}: that one goes
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.bytes(), 20u);
    EXPECT_TRUE(cache.insert({1, 2, 7}, state_of(10)));  // a branch: both stay
    EXPECT_EQ(cache.size(), 2u);
}

// Entries are keyed by the LoRA scales of their cells: a prompt under other
// scales matches none, and the same tokens under two scales are two entries.
TEST(PromptCache, EntriesServeOnlyTheirOwnLoraScales) {
    PromptCache cache(1 << 20);
    const std::vector<float> one{1.0f}, zero{0.0f};
    ASSERT_TRUE(cache.insert({1, 2, 3, 4}, std::vector<uint8_t>(10, 1), one));
    const std::vector<TokenId> prompt{1, 2, 3, 4, 5};
    EXPECT_EQ(cache.best_match(prompt, 0, zero).entry, nullptr);
    EXPECT_EQ(cache.best_match(prompt, 0).entry, nullptr);  // no adapters is other scales too
    EXPECT_TRUE(cache.would_keep(std::vector<TokenId>{1, 2, 3}, 10, zero));  // a prefix, but under other scales
    ASSERT_TRUE(cache.insert({1, 2, 3}, std::vector<uint8_t>(10, 0), zero));
    EXPECT_EQ(cache.size(), 2u);
    const PromptCache::Match m1 = cache.best_match(prompt, 0, one), m0 = cache.best_match(prompt, 0, zero);
    ASSERT_NE(m1.entry, nullptr);
    ASSERT_NE(m0.entry, nullptr);
    EXPECT_EQ(m1.n_common, 4u);
    EXPECT_EQ(m0.n_common, 3u);
    EXPECT_EQ(m0.entry->state.span().front(), 0);
    // A longer entry under one scale does not replace the other scale's.
    ASSERT_TRUE(cache.insert({1, 2, 3, 4, 5, 6}, std::vector<uint8_t>(10, 1), one));
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.best_match(prompt, 0, zero).n_common, 3u);
}

// Every state the cache lets go or refuses is handed to on_drop once (a
// model split over ranks frees the other ranks' parts there); kept ones are not.
TEST(PromptCache, EveryStateLetGoOrRefusedIsDropped) {
    std::vector<uint8_t> dropped;  // the first byte of each dropped state
    PromptCache cache(100);
    cache.set_on_drop([&](std::span<const uint8_t> s) { dropped.push_back(s[0]); });
    EXPECT_TRUE(cache.insert({1, 2}, std::vector<uint8_t>(40, 1)));
    EXPECT_TRUE(cache.insert({5}, std::vector<uint8_t>(40, 2)));
    EXPECT_FALSE(cache.insert({1}, std::vector<uint8_t>(10, 3)));         // a prefix of a kept one: refused
    EXPECT_TRUE(cache.insert({1, 2, 3}, std::vector<uint8_t>(30, 4)));   // extends {1,2}: that one goes
    EXPECT_TRUE(cache.insert({7}, std::vector<uint8_t>(50, 5)));         // over the budget: {5} goes (least recent)
    EXPECT_FALSE(cache.insert({8}, std::vector<uint8_t>(101, 6)));       // alone over the budget
    EXPECT_EQ(dropped, (std::vector<uint8_t>{3, 1, 2, 6}));
    EXPECT_EQ(cache.size(), 2u);
}

TEST(PromptCache, OffOrOverBudgetKeepsNothing) {
    PromptCache off(0);
    EXPECT_FALSE(off.enabled());
    EXPECT_FALSE(off.insert({1}, state_of(1)));
    PromptCache small(100);
    EXPECT_TRUE(small.insert({1}, state_of(60)));
    EXPECT_FALSE(small.insert({2}, state_of(101)));  // alone over the budget: the kept one stays
    EXPECT_EQ(small.size(), 1u);
    EXPECT_FALSE(small.insert({}, state_of(1)));
}

// ----------------------------------------------------------- the scheduler

std::string model() { return cria::test::model_path("stories260K/stories260K.gguf").string(); }

struct Outcome {
    std::string text;
    GenerationEvent done;
};

Outcome wait(const std::shared_ptr<RequestHandle>& h) {
    Outcome r;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            r.text += ev->text;
            continue;
        }
        r.done = *ev;
        return r;
    }
    ADD_FAILURE() << "no result within 60 s";
    return r;
}

GenerationRequest greedy(const cria::vocab::Vocab& v, const std::string& prompt, int n) {
    GenerationRequest g;
    g.prompt = v.tokenize(prompt, true, false);
    g.sampling.temp = 0.0f;
    g.max_tokens = n;
    return g;
}

RuntimeBackendParams params() {
    RuntimeBackendParams p;
    p.n_seq = 2;
    p.n_ctx = 1024;
    p.n_batch = 64;
    p.n_threads = 2;
    return p;
}

const std::string kPrefix =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, "
    "she saw a big red ball in the park. She ran to the ball and kicked it very hard. The ball went up in the sky "
    "and came down on a tree. Lily was sad because she could not reach the ball. Then her friend Tom came.";

// Slot 0 answers A (the long prefix + an ending), then takes an unrelated
// request Q, so that A's cells leave it (into the prompt cache). B shares
// A's prefix and arrives while Q holds slot 0: it goes to slot 1, whose cache
// is empty, and with the prompt cache it evaluates only what follows the
// shared prefix. Returns B's outcome.
Outcome b_after_a_on_another_slot(uint64_t cache_bytes, SchedulerStats* stats = nullptr) {
    RuntimeBackend backend(model(), params());
    Scheduler s(backend, {.n_slots = 2, .prompt_cache_bytes = cache_bytes});
    const Outcome a = wait(s.submit(greedy(backend.vocab(), kPrefix + " He said hello.", 8)));
    EXPECT_EQ(a.done.slot, 0);
    auto q = s.submit(greedy(backend.vocab(), "The cat sat on the mat and", 120));
    auto b = s.submit(greedy(backend.vocab(), kPrefix + " He had a long stick.", 16));
    const Outcome got = wait(b);
    const Outcome q_done = wait(q);
    EXPECT_EQ(q_done.done.slot, 0);
    EXPECT_EQ(got.done.slot, 1);
    if (stats) *stats = s.stats();
    return got;
}

TEST(SchedulerPromptCache, AnotherSlotReusesAPrefixThatASlotLetGo) {
    RuntimeBackend reference_backend(model(), params());
    const auto b_prompt = reference_backend.vocab().tokenize(kPrefix + " He had a long stick.", true, false);
    const auto a_prompt = reference_backend.vocab().tokenize(kPrefix + " He said hello.", true, false);
    size_t shared = 0;
    while (shared < a_prompt.size() && a_prompt[shared] == b_prompt[shared]) ++shared;
    ASSERT_GT(shared, 50u);

    // Without the cache at most the BOS is reused: slot 0 (busy with Q) lends
    // the prefix it shares with B (Scheduler::start's slot lending), just BOS.
    const Outcome without = b_after_a_on_another_slot(0);
    EXPECT_LE(without.done.n_cached, 1);

    SchedulerStats stats;
    const Outcome with = b_after_a_on_another_slot(64u << 20, &stats);
    EXPECT_EQ(with.done.n_cached, static_cast<int32_t>(shared));
    EXPECT_EQ(with.done.n_prompt, static_cast<int32_t>(b_prompt.size()));
    EXPECT_EQ(with.text, without.text);  // the loaded cells are the ones evaluating would give
    EXPECT_FALSE(with.text.empty());
    EXPECT_EQ(stats.prompt_cache_hits, 1u);
    EXPECT_EQ(stats.prompt_cache_tokens, shared);
    EXPECT_GE(stats.prompt_cache_entries, 1u);
    EXPECT_GT(stats.prompt_cache_bytes, 0u);

    // A budget too small for one prompt's state keeps nothing.
    const Outcome tiny = b_after_a_on_another_slot(1024);
    EXPECT_LE(tiny.done.n_cached, 1);
    EXPECT_EQ(tiny.text, without.text);
}

}  // namespace
