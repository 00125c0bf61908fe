// Turn checkpoints on a hybrid model (Qwen3.5: gated delta-net layers and
// attention): the next turn of a conversation evaluates only the tokens
// after the previous turn's state, in whichever slot it lands, and gives
// the same output as a cold run. And the store itself: longest prefix,
// bounded in bytes, least recently used dropped.
#include <gtest/gtest.h>

#include <numeric>

#include "cria/model/synthetic_model.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "cria/server/state_checkpoints.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

std::string hybrid_model() {
    static const std::string path = [] {
        cria::model::SyntheticModelSpec spec = cria::model::SyntheticModelSpec::tiny("qwen35");
        spec.stddev = 0.08f;
        spec.seed = 5;
        const auto p = (cria::test::temp_dir() / "turn-checkpoints-qwen35.gguf").string();
        cria::model::write_synthetic_model(spec, p);
        return p;
    }();
    return path;
}

RuntimeBackendParams params(int n_seq) {
    RuntimeBackendParams p;
    p.n_seq = n_seq;
    p.n_ctx = 256 * n_seq;
    p.n_batch = 64;
    p.n_threads = 2;
    return p;
}

struct Turn {
    std::vector<TokenId> generated;  // token ids
    GenerationEvent done;
};

Turn run(Scheduler& s, std::vector<TokenId> prompt, int n) {
    GenerationRequest g;
    g.prompt = std::move(prompt);
    g.sampling.temp = 0.0f;
    g.max_tokens = n;
    g.top_logprobs = 0;  // the token ids come with the text
    auto h = s.submit(g);
    Turn t;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            for (const auto& lp : ev->logprobs) t.generated.push_back(lp.id);
            continue;
        }
        EXPECT_EQ(ev->kind, GenerationEvent::Kind::Done) << ev->error;
        t.done = *ev;
        return t;
    }
    ADD_FAILURE() << "no result within 60 s";
    return t;
}

std::vector<TokenId> tokens(TokenId first, int n) {
    std::vector<TokenId> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), first);
    return v;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST(TurnCheckpoints, TheNextTurnEvaluatesOnlyTheNewTokens) {
    const std::vector<TokenId> user1 = tokens(200, 24), user2 = tokens(40, 9), other = tokens(100, 30);
    RuntimeBackend backend(hybrid_model(), params(1));
    ASSERT_TRUE(backend.wants_turn_checkpoints());
    Scheduler s(backend, {.n_slots = 1});
    const Turn first = run(s, user1, 8);
    ASSERT_EQ(first.done.finish_reason, "length");
    ASSERT_EQ(first.generated.size(), 8u);
    // Another conversation takes the only slot in between: its state is gone
    // from the memory, and only the checkpoint still holds turn 1.
    run(s, other, 4);
    // Turn 2: the whole history, the reply included, then the new message.
    const std::vector<TokenId> prompt2 = concat(concat(user1, first.generated), user2);
    const Turn second = run(s, prompt2, 8);
    // The checkpoint holds turn 1's prompt and its reply but the last token
    // (sampled, never decoded): that token and the new message are evaluated.
    const int32_t checkpoint = static_cast<int32_t>(user1.size() + first.generated.size()) - 1;
    EXPECT_EQ(second.done.n_cached, checkpoint);
    EXPECT_EQ(second.done.n_prompt - second.done.n_cached, static_cast<int32_t>(user2.size()) + 1);
    EXPECT_EQ(s.stats().turn_checkpoint_hits_total, 1u);
    EXPECT_GE(s.stats().turn_checkpoints, 3u);  // after turn 1's prompt, turn 1, the other conversation...
    EXPECT_GT(s.stats().turn_checkpoint_bytes, 0u);

    // A cold run of turn 2 gives the same tokens.
    RuntimeBackend cold_backend(hybrid_model(), params(1));
    Scheduler cold(cold_backend, {.n_slots = 1});
    const Turn reference = run(cold, prompt2, 8);
    EXPECT_EQ(reference.done.n_cached, 0);
    EXPECT_EQ(second.generated, reference.generated);
}

TEST(TurnCheckpoints, AReplyRenderedWithOtherTokensResumesAfterThePrompt) {
    // The next turn's history holds the reply as other tokens than were
    // generated (a template that rewrites it, a text that tokenizes another
    // way): the checkpoint at the end of turn 1's prompt still applies.
    const std::vector<TokenId> user1 = tokens(200, 24), reply = tokens(150, 6), user2 = tokens(40, 9);
    RuntimeBackend backend(hybrid_model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    const Turn first = run(s, user1, 8);
    ASSERT_NE(first.generated, reply);
    const std::vector<TokenId> prompt2 = concat(concat(user1, reply), user2);
    const Turn second = run(s, prompt2, 8);
    EXPECT_EQ(second.done.n_cached, static_cast<int32_t>(user1.size()));
    EXPECT_EQ(second.done.n_prompt - second.done.n_cached, static_cast<int32_t>(reply.size() + user2.size()));

    RuntimeBackend cold_backend(hybrid_model(), params(1));
    Scheduler cold(cold_backend, {.n_slots = 1});
    EXPECT_EQ(run(cold, prompt2, 8).generated, second.generated);
}

TEST(TurnCheckpoints, WithoutThemAHybridModelEvaluatesTheWholeHistory) {
    // The same conversation with the store off: what the checkpoint saves.
    const std::vector<TokenId> user1 = tokens(200, 24), user2 = tokens(40, 9), other = tokens(100, 30);
    RuntimeBackend backend(hybrid_model(), params(1));
    SchedulerOptions o{.n_slots = 1};
    o.turn_checkpoint_bytes = 0;
    Scheduler s(backend, o);
    const Turn first = run(s, user1, 8);
    run(s, other, 4);
    const Turn second = run(s, concat(concat(user1, first.generated), user2), 8);
    EXPECT_EQ(second.done.n_cached, 0);
    EXPECT_EQ(s.stats().turn_checkpoint_hits_total, 0u);
}

TEST(TurnCheckpoints, ConversationsResumeInAnySlotAndARegeneratedTurnToo) {
    // Two slots, two conversations, each turn 2 landing wherever; then the
    // same turn 2 again (a regenerated reply): every resumed prompt gives the
    // cold run's tokens.
    const std::vector<TokenId> a1 = tokens(230, 20), b1 = tokens(200, 17), a2 = tokens(40, 5), b2 = tokens(60, 7);
    RuntimeBackend backend(hybrid_model(), params(2));
    Scheduler s(backend, {.n_slots = 2});
    const Turn ta = run(s, a1, 6), tb = run(s, b1, 6);
    const auto pa = concat(concat(a1, ta.generated), a2), pb = concat(concat(b1, tb.generated), b2);
    const Turn tb2 = run(s, pb, 6), ta2 = run(s, pa, 6);
    EXPECT_EQ(ta2.done.n_prompt - ta2.done.n_cached, static_cast<int32_t>(a2.size()) + 1);
    EXPECT_EQ(tb2.done.n_prompt - tb2.done.n_cached, static_cast<int32_t>(b2.size()) + 1);
    const Turn again = run(s, pb, 6);
    EXPECT_EQ(again.generated, tb2.generated);
    EXPECT_GT(again.done.n_cached, 0);

    RuntimeBackend cold_backend(hybrid_model(), params(1));
    Scheduler cold(cold_backend, {.n_slots = 1});
    EXPECT_EQ(run(cold, pa, 6).generated, ta2.generated);
    EXPECT_EQ(run(cold, pb, 6).generated, tb2.generated);
}

// Every checkpoint replaced, evicted or too large for the store is handed to on_drop once.
TEST(StateCheckpoints, EveryStateLetGoOrRefusedIsDropped) {
    std::vector<uint8_t> dropped;  // the first byte of each dropped state
    const size_t entry = 100 + 2 * sizeof(TokenId);
    StateCheckpoints store(2 * entry, [&](std::span<const uint8_t> s) { dropped.push_back(s[0]); });
    store.put({1, 1}, std::vector<uint8_t>(100, 1));
    store.put({1, 1}, std::vector<uint8_t>(100, 2));  // the same tokens: the first goes
    store.put({2, 2}, std::vector<uint8_t>(100, 3));
    store.put({3, 3}, std::vector<uint8_t>(100, 4));  // over the budget: {1,1} goes
    store.put({4, 4}, std::vector<uint8_t>(3 * entry, 5));  // alone over the budget
    EXPECT_EQ(dropped, (std::vector<uint8_t>{1, 2, 5}));
    EXPECT_EQ(store.size(), 2u);
}

TEST(StateCheckpoints, LongestPrefixLeavesOneTokenToEvaluate) {
    StateCheckpoints store(1 << 20);
    store.put({1, 2, 3}, std::vector<uint8_t>(10, 3));
    store.put({1, 2}, std::vector<uint8_t>(10, 2));
    store.put({1, 9, 9, 9}, std::vector<uint8_t>(10, 9));
    const std::vector<TokenId> prompt{1, 2, 3, 4};
    const auto* c = store.longest_prefix_of(prompt);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->tokens, (std::vector<TokenId>{1, 2, 3}));
    // The whole prompt is never a hit: its last token must be evaluated for the first sample.
    const std::vector<TokenId> exact{1, 2, 3};
    c = store.longest_prefix_of(exact);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->tokens, (std::vector<TokenId>{1, 2}));
    const std::vector<TokenId> unrelated{7, 1, 2, 3};
    EXPECT_EQ(store.longest_prefix_of(unrelated), nullptr);
}

// Checkpoints are keyed by the LoRA scales of their state.
TEST(StateCheckpoints, OnlyUnderTheirOwnLoraScales) {
    StateCheckpoints store(1 << 20);
    const std::vector<float> one{1.0f}, zero{0.0f};
    store.put({1, 2, 3}, std::vector<uint8_t>(10, 1), one);
    const std::vector<TokenId> prompt{1, 2, 3, 4};
    EXPECT_EQ(store.longest_prefix_of(prompt, zero), nullptr);
    EXPECT_EQ(store.longest_prefix_of(prompt), nullptr);
    store.put({1, 2, 3}, std::vector<uint8_t>(10, 0), zero);  // the same tokens under other scales: kept apart
    EXPECT_EQ(store.size(), 2u);
    const auto* c = store.longest_prefix_of(prompt, zero);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->state.front(), 0);
    c = store.longest_prefix_of(prompt, one);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->state.front(), 1);
}

TEST(StateCheckpoints, BoundedInBytesLeastRecentlyUsedFirst) {
    const size_t entry = 100 + 2 * sizeof(TokenId);
    StateCheckpoints store(3 * entry);
    store.put({1, 1}, std::vector<uint8_t>(100));
    store.put({2, 2}, std::vector<uint8_t>(100));
    store.put({3, 3}, std::vector<uint8_t>(100));
    EXPECT_EQ(store.bytes(), 3 * entry);
    const std::vector<TokenId> p1{1, 1, 5};
    ASSERT_NE(store.longest_prefix_of(p1), nullptr);  // {1,1} is now the most recently used
    store.put({4, 4}, std::vector<uint8_t>(100));     // drops {2,2}
    EXPECT_EQ(store.size(), 3u);
    EXPECT_LE(store.bytes(), store.max_bytes());
    const std::vector<TokenId> p2{2, 2, 5}, p3{3, 3, 5};
    EXPECT_EQ(store.longest_prefix_of(p2), nullptr);
    EXPECT_NE(store.longest_prefix_of(p1), nullptr);
    EXPECT_NE(store.longest_prefix_of(p3), nullptr);
    // The same tokens again replace their checkpoint; one bigger than the budget is not kept.
    store.put({3, 3}, std::vector<uint8_t>(50));
    EXPECT_EQ(store.size(), 3u);
    store.put({5, 5}, std::vector<uint8_t>(4 * entry));
    EXPECT_EQ(store.size(), 3u);
    const std::vector<TokenId> p5{5, 5, 1};
    EXPECT_EQ(store.longest_prefix_of(p5), nullptr);
}
