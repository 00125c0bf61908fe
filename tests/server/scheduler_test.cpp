// The scheduler on stories260K: batching several slots gives each request
// the same greedy tokens it gets alone, prefixes are reused, stop strings,
// limits, cancellation and the queue bound.
#include <gtest/gtest.h>

#include <thread>

#include "cria/core/error.h"
#include "cria/server/reference_backend.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

std::string model() { return cria::test::model_path("stories260K/stories260K.gguf").string(); }

struct Result {
    std::string text;
    GenerationEvent done;
    std::vector<TokenLogprob> logprobs;
};

Result wait(const std::shared_ptr<RequestHandle>& h) {
    Result r;
    for (int i = 0; i < 600; ++i) {  // bounded: 60 s
        auto ev = h->pop(std::chrono::milliseconds(100));
        if (!ev) continue;
        if (ev->kind == GenerationEvent::Kind::Text) {
            r.text += ev->text;
            r.logprobs.insert(r.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
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

RuntimeBackendParams params(int n_seq) {
    RuntimeBackendParams p;
    p.n_seq = n_seq;
    p.n_ctx = 256 * n_seq;
    p.n_batch = 64;
    p.n_threads = 2;
    return p;
}

const char* kPrompts[] = {"Once upon a time", "Lily and Tom went to the park. They saw", "The cat", "One day, a big dog"};

}  // namespace

TEST(Scheduler, BatchedSlotsMatchOneAtATime) {
    std::vector<std::string> alone;
    {
        RuntimeBackend backend(model(), params(1));
        Scheduler s(backend, {.n_slots = 1, .max_queue = 8, .n_batch = 64});
        for (const char* p : kPrompts) alone.push_back(wait(s.submit(greedy(backend.vocab(), p, 40))).text);
    }
    RuntimeBackend backend(model(), params(4));
    // A small batch forces the longer prompts to be prefilled in chunks
    // while the other slots are already generating.
    Scheduler s(backend, {.n_slots = 4, .max_queue = 8, .n_batch = 6});
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const char* p : kPrompts) handles.push_back(s.submit(greedy(backend.vocab(), p, 40)));
    for (size_t i = 0; i < handles.size(); ++i) {
        Result r = wait(handles[i]);
        EXPECT_EQ(r.text, alone[i]) << kPrompts[i];
        EXPECT_EQ(r.done.finish_reason, "length");
        EXPECT_EQ(r.done.n_generated, 40);
        EXPECT_FALSE(r.text.empty());
    }
    EXPECT_LT(s.stats().decode_calls, 4u * 45u);  // slots shared decode steps
}

TEST(Scheduler, RuntimeMatchesReferenceForward) {
    RuntimeBackend fast(model(), params(1));
    ReferenceBackend ref(model(), 1, 256);
    Scheduler a(fast, {.n_slots = 1});
    const std::string fast_text = wait(a.submit(greedy(fast.vocab(), kPrompts[1], 12))).text;
    Scheduler b(ref, {.n_slots = 1});
    EXPECT_EQ(wait(b.submit(greedy(ref.vocab(), kPrompts[1], 12))).text, fast_text);
}

TEST(Scheduler, ReusesTheCachedPrefix) {
    RuntimeBackend backend(model(), params(2));
    Scheduler s(backend, {.n_slots = 2});
    Result first = wait(s.submit(greedy(backend.vocab(), "Lily and Tom went to the park. They saw a dog.", 5)));
    EXPECT_EQ(first.done.n_cached, 0);
    Result second = wait(s.submit(greedy(backend.vocab(), "Lily and Tom went to the park. They saw a cat.", 5)));
    const auto n_prompt = greedy(backend.vocab(), "Lily and Tom went to the park. They saw a", 1).prompt.size();
    EXPECT_GE(second.done.n_cached, static_cast<int32_t>(n_prompt) - 1);
    EXPECT_LT(second.done.n_cached, second.done.n_prompt);
    // The same prompt again: everything but the last token comes from the cache.
    Result third = wait(s.submit(greedy(backend.vocab(), "Lily and Tom went to the park. They saw a cat.", 5)));
    EXPECT_EQ(third.done.n_cached, third.done.n_prompt - 1);
    EXPECT_EQ(third.text, second.text);
}

TEST(Scheduler, StopStringsEndTheOutputBeforeThem) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    const std::string full = wait(s.submit(greedy(backend.vocab(), kPrompts[0], 40))).text;
    const size_t at = full.find("girl");
    ASSERT_NE(at, std::string::npos) << full;
    auto g = greedy(backend.vocab(), kPrompts[0], 40);
    g.stop = {"girl", "never-appears"};
    Result r = wait(s.submit(g));
    EXPECT_EQ(r.text, full.substr(0, at));
    EXPECT_EQ(r.done.finish_reason, "stop");
    EXPECT_EQ(r.done.stop_word, "girl");
}

TEST(Scheduler, LogprobsAreNormalisedAndOrdered) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    auto g = greedy(backend.vocab(), kPrompts[0], 6);
    g.top_logprobs = 3;
    Result r = wait(s.submit(g));
    ASSERT_EQ(r.logprobs.size(), 6u);
    for (const auto& lp : r.logprobs) {
        EXPECT_LE(lp.logprob, 0.0f);
        ASSERT_EQ(lp.top.size(), 3u);
        EXPECT_EQ(lp.top[0].token, lp.token);  // greedy picks the most likely
        EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
        EXPECT_GE(lp.top[1].logprob, lp.top[2].logprob);
    }
}

TEST(Scheduler, CancellationFreesTheSlotAndQueueIsBounded) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1, .max_queue = 2});
    auto long_one = s.submit(greedy(backend.vocab(), kPrompts[0], 200));
    auto q1 = s.submit(greedy(backend.vocab(), kPrompts[1], 3));
    auto q2 = s.submit(greedy(backend.vocab(), kPrompts[2], 3));
    // The slot is busy and the queue may hold two.
    bool refused = false;
    for (int i = 0; i < 5 && !refused; ++i) {
        try {
            s.submit(greedy(backend.vocab(), kPrompts[3], 3));
        } catch (const QueueFull&) {
            refused = true;
        }
    }
    EXPECT_TRUE(refused);
    long_one->cancel();
    Result r = wait(long_one);
    EXPECT_EQ(r.done.finish_reason, "cancelled");
    EXPECT_LT(r.done.n_generated, 200);
    EXPECT_EQ(wait(q1).done.finish_reason, "length");
    EXPECT_EQ(wait(q2).done.finish_reason, "length");
    for (int i = 0; i < 100 && s.stats().slots_busy != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(s.stats().slots_busy, 0);
}

TEST(Scheduler, RejectsBadRequestsBeforeQueueing) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    GenerationRequest empty;
    EXPECT_THROW(s.submit(empty), cria::Error);
    auto too_long = greedy(backend.vocab(), "x", 1);
    too_long.prompt.assign(300, 5);
    EXPECT_THROW(s.submit(too_long), cria::Error);
    auto bad_token = greedy(backend.vocab(), "x", 1);
    bad_token.prompt.push_back(100000);
    EXPECT_THROW(s.submit(bad_token), cria::Error);
    auto bad_grammar = greedy(backend.vocab(), "x", 1);
    bad_grammar.grammar = "root ::= (";
    EXPECT_THROW(s.submit(bad_grammar), cria::Error);
    EXPECT_EQ(s.stats().requests_total, 0u);
}

TEST(Scheduler, GrammarConstrainsTheOutput) {
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    auto g = greedy(backend.vocab(), kPrompts[0], 50);
    g.grammar = R"(root ::= "yes" | "no")";
    Result r = wait(s.submit(g));
    EXPECT_TRUE(r.text == "yes" || r.text == "no") << r.text;
    EXPECT_EQ(r.done.finish_reason, "stop");
}

TEST(Scheduler, LazyGrammarWaitsForItsTrigger) {
    // As the tool-call grammars of `tool_choice: auto`: free text until the
    // trigger word, then only what the grammar allows (the trigger included).
    RuntimeBackend backend(model(), params(1));
    Scheduler s(backend, {.n_slots = 1});
    const std::string free_text = wait(s.submit(greedy(backend.vocab(), kPrompts[0], 30))).text;
    const std::string trigger = " was";
    const size_t at = free_text.find(trigger);
    ASSERT_NE(at, std::string::npos) << free_text;
    auto g = greedy(backend.vocab(), kPrompts[0], 30);
    g.grammar = R"(root ::= " was" "!"+)";
    g.grammar_options.lazy = true;
    g.grammar_options.triggers.words = {trigger};
    const Result r = wait(s.submit(g));
    ASSERT_GT(r.text.size(), at + trigger.size()) << r.text;
    EXPECT_EQ(r.text.substr(0, at + trigger.size()), free_text.substr(0, at + trigger.size()));
    EXPECT_EQ(r.text.find_first_not_of('!', at + trigger.size()), std::string::npos) << r.text;
    // A lazy grammar without triggers is refused before it is queued.
    auto no_trigger = greedy(backend.vocab(), kPrompts[0], 5);
    no_trigger.grammar = R"(root ::= "x")";
    no_trigger.grammar_options.lazy = true;
    EXPECT_THROW(s.submit(no_trigger), cria::Error);
}

TEST(Scheduler, SlotSaveRestoreRoundTrip) {
    RuntimeBackend backend(model(), params(2));
    Scheduler s(backend, {.n_slots = 2});
    const auto prompt = greedy(backend.vocab(), kPrompts[1], 4);
    wait(s.submit(prompt));
    const auto file = (cria::test::temp_dir() / "slot0.bin").string();
    const size_t n = s.save_slot(0, file);
    EXPECT_EQ(n, prompt.prompt.size() + 3);  // the last sampled token is never decoded
    s.erase_slot(0);
    EXPECT_EQ(s.slots()[0].n_cached, 0);
    EXPECT_EQ(s.restore_slot(1, file), n);
    // The restored slot serves the same prompt from its cache.
    Result again = wait(s.submit(prompt));
    EXPECT_EQ(again.done.n_cached, again.done.n_prompt - 1);
    EXPECT_THROW(s.restore_slot(0, file + ".missing"), cria::Error);
    EXPECT_THROW(s.save_slot(7, file), cria::Error);
}
