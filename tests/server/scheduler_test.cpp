// The scheduler on stories260K: batching several slots gives each request
// the same greedy tokens it gets alone, prefixes are reused, stop strings,
// limits, cancellation and the queue bound.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <iterator>
#include <thread>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/server/reference_backend.h"
#include "cria/server/runtime_backend.h"
#include "cria/server/scheduler.h"
#include "cria/spec/params.h"
#include "cria/vocab/streaming_detokenizer.h"
#include "support/feature_recorder.h"
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
    // All four start in the first step (not as the thread timing has it).
    Scheduler s(backend, {.n_slots = 4, .max_queue = 8, .n_batch = 6, .start_paused = true});
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const char* p : kPrompts) handles.push_back(s.submit(greedy(backend.vocab(), p, 40)));
    s.resume();
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

namespace {

// Holds the scheduler's thread in its hold_at-th decode until released, so
// that a test acts while a request is surely mid-generation (stories260K
// generates 200 tokens faster than a loaded machine may reschedule a thread).
class HeldBackend final : public RuntimeBackend {
public:
    HeldBackend(const std::string& path, const RuntimeBackendParams& p, int hold_at)
        : RuntimeBackend(path, p), hold_at_(hold_at) {}
    void decode(std::span<const BatchToken> batch, std::vector<float>& logits) override {
        if (++n_decodes_ == hold_at_) {
            reached = true;
            while (held) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        RuntimeBackend::decode(batch, logits);
    }
    std::atomic<bool> reached{false}, held{true};

private:
    int hold_at_;
    int n_decodes_ = 0;  // the scheduler's thread only
};

}  // namespace

TEST(Scheduler, CancellationFreesTheSlotAndQueueIsBounded) {
    HeldBackend backend(model(), params(1), 10);
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
    // Cancelled in the middle of its generation (bounded wait: 60 s).
    for (int i = 0; i < 60000 && !backend.reached; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(backend.reached);
    long_one->cancel();
    backend.held = false;
    Result r = wait(long_one);
    EXPECT_EQ(r.done.finish_reason, "cancelled");
    EXPECT_LT(r.done.n_generated, 200);
    EXPECT_EQ(wait(q1).done.finish_reason, "length");
    EXPECT_EQ(wait(q2).done.finish_reason, "length");
    // Bounded (10 s) for a loaded machine; it takes one loop iteration.
    for (int i = 0; i < 1000 && s.stats().slots_busy != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
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

// Counts the tokens the scheduler evaluates (restoring a slot must evaluate
// none) and records the speculative steps' checkpoints.
class CountingBackend final : public Backend {
public:
    explicit CountingBackend(Backend& inner) : inner_(inner) {}
    const cria::vocab::Vocab& vocab() const override { return inner_.vocab(); }
    int32_t n_vocab() const override { return inner_.n_vocab(); }
    int32_t n_ctx_per_seq() const override { return inner_.n_ctx_per_seq(); }
    int32_t max_batch() const override { return inner_.max_batch(); }
    std::string model_name() const override { return inner_.model_name(); }
    std::string chat_template() const override { return inner_.chat_template(); }
    void decode(std::span<const BatchToken> batch, std::vector<float>& logits) override {
        evaluated += batch.size();
        inner_.decode(batch, logits);
    }
    bool seq_keep_prefix(int32_t seq, int32_t keep) override { return inner_.seq_keep_prefix(seq, keep); }
    bool checkpoint_begin(int32_t seq, int32_t n) override {
        checkpoints.push_back({seq, n, -1});
        return inner_.checkpoint_begin(seq, n);
    }
    bool checkpoint_commit(int32_t seq, int32_t n) override {
        for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it)
            if (it->seq == seq) {
                EXPECT_EQ(it->n_accepted, -1) << "a commit without a begin";
                it->n_accepted = n;
                break;
            }
        return inner_.checkpoint_commit(seq, n);
    }
    std::vector<std::unique_ptr<cria::spec::Drafter>> make_drafters(const cria::spec::SpecParams& p) override {
        return inner_.make_drafters(p);
    }
    size_t save_sequence(int32_t seq, std::span<const TokenId> tokens, const std::string& path) override {
        return inner_.save_sequence(seq, tokens, path);
    }
    std::vector<TokenId> restore_sequence(int32_t seq, const std::string& path) override {
        return inner_.restore_sequence(seq, path);
    }
    std::vector<float> embed(std::span<const TokenId> tokens) override { return inner_.embed(tokens); }

    std::atomic<size_t> evaluated{0};
    struct Checkpoint {
        int32_t seq, n_positions, n_accepted;  // n_accepted -1: not committed (yet)
    };
    std::vector<Checkpoint> checkpoints;  // touched on the scheduler's thread only

private:
    Backend& inner_;
};

std::vector<TokenId> ids(const Result& r) {
    std::vector<TokenId> out;
    for (const auto& lp : r.logprobs) out.push_back(lp.id);
    return out;
}

TEST(Scheduler, RestoredSlotContinuesAsIfUninterrupted) {
    constexpr int kTotal = 30, kFirst = 10;
    std::vector<TokenId> expected;
    {
        RuntimeBackend backend(model(), params(1));
        Scheduler s(backend, {.n_slots = 1});
        auto g = greedy(backend.vocab(), kPrompts[1], kTotal);
        g.top_logprobs = 0;  // for the token ids
        expected = ids(wait(s.submit(g)));
        ASSERT_EQ(expected.size(), static_cast<size_t>(kTotal));
    }
    RuntimeBackend runtime(model(), params(2));
    CountingBackend backend(runtime);
    Scheduler s(backend, {.n_slots = 2});
    auto g = greedy(backend.vocab(), kPrompts[1], kFirst);
    g.top_logprobs = 0;
    const Result first = wait(s.submit(g));
    ASSERT_EQ(ids(first), std::vector<TokenId>(expected.begin(), expected.begin() + kFirst));
    const int32_t slot = first.done.slot;
    const auto file = (cria::test::temp_dir() / "slot-continue.bin").string();
    // The last sampled token is never decoded, so the slot holds one token less.
    EXPECT_EQ(s.save_slot(slot, file), g.prompt.size() + kFirst - 1);
    s.erase_slot(slot);
    EXPECT_EQ(s.slots()[static_cast<size_t>(slot)].n_cached, 0);
    // Another text takes the freed cells, so nothing of the saved one is left in the cache.
    wait(s.submit(greedy(backend.vocab(), "The big dog ran to the park and played with a red ball all day", 12)));

    const int32_t other = 1 - slot;
    const size_t evaluated = backend.evaluated.load();
    EXPECT_EQ(s.restore_slot(other, file), g.prompt.size() + kFirst - 1);
    EXPECT_EQ(backend.evaluated.load(), evaluated);  // no forward pass
    EXPECT_EQ(s.slots()[static_cast<size_t>(other)].n_cached, static_cast<int32_t>(g.prompt.size()) + kFirst - 1);

    // The conversation goes on in the restored slot: only the newest token is evaluated.
    auto next = greedy(backend.vocab(), kPrompts[1], kTotal - kFirst);
    next.prompt.insert(next.prompt.end(), expected.begin(), expected.begin() + kFirst);
    next.top_logprobs = 0;
    const Result rest = wait(s.submit(next));
    EXPECT_EQ(rest.done.slot, other);
    EXPECT_EQ(rest.done.n_cached, rest.done.n_prompt - 1);
    EXPECT_EQ(ids(rest), std::vector<TokenId>(expected.begin() + kFirst, expected.end()));
}

TEST(Scheduler, RefusedSlotFilesLeaveTheSlotAsItWas) {
    RuntimeBackend backend(model(), params(2));
    Scheduler s(backend, {.n_slots = 2});
    const Result r = wait(s.submit(greedy(backend.vocab(), kPrompts[0], 4)));
    const auto dir = cria::test::temp_dir();
    const auto file = (dir / "slot-good.bin").string();
    const size_t n = s.save_slot(r.done.slot, file);
    const auto held = s.slots()[static_cast<size_t>(r.done.slot)].n_cached;
    ASSERT_EQ(held, static_cast<int32_t>(n));
    std::string bytes;
    {
        std::ifstream in(file, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto write = [&](const std::string& name, const std::string& data) {
        const auto p = (dir / name).string();
        std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
        return p;
    };
    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x01;
    // A file saved by a server on another model.
    const auto foreign = (dir / "slot-foreign.bin").string();
    {
        RuntimeBackend other(cria::test::model_path("austen-1m/austen-1m-f32.gguf").string(), params(1));
        Scheduler o(other, {.n_slots = 1});
        wait(o.submit(greedy(other.vocab(), "It is a truth", 2)));
        o.save_slot(0, foreign);
    }
    for (const auto& [path, why] : {std::pair{write("slot-truncated.bin", bytes.substr(0, bytes.size() - 9)), "truncated"},
                                    std::pair{write("slot-corrupt.bin", flipped), "corrupt"},
                                    std::pair{foreign, "another model"},
                                    std::pair{write("slot-text.bin", "hello, this is not a slot file"), "not a cria"}}) {
        try {
            s.restore_slot(r.done.slot, path);
            ADD_FAILURE() << why << ": accepted";
        } catch (const cria::Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
        EXPECT_EQ(s.slots()[static_cast<size_t>(r.done.slot)].n_cached, held) << why;
    }
    // The slot still serves its prompt from the cache.
    const Result again = wait(s.submit(greedy(backend.vocab(), kPrompts[0], 4)));
    EXPECT_EQ(again.done.n_cached, again.done.n_prompt - 1);
    EXPECT_EQ(again.text, r.text);
    EXPECT_THROW(s.restore_slot(0, file + ".missing"), cria::Error);
    EXPECT_THROW(s.save_slot(7, file), cria::Error);
}

namespace {

// ngram-simple with short keys drafts often on stories' repetitive text; the
// draft model is the target itself, so greedy drafts are all accepted.
cria::spec::SpecParams speculation(bool with_model) {
    cria::spec::SpecParams p;
    p.types = {cria::spec::SpecType::NgramSimple};
    p.ngram_simple.size_n = 2;
    p.ngram_simple.size_m = 6;
    if (with_model) p.draft_model = model();
    p.n_max = 6;
    p.adaptive = false;  // every step drafts: the counts below do not depend on timings
    return p;
}

}  // namespace

TEST(Scheduler, SpeculationGivesThePlainOutput) {
    // Greedy and seeded sampling, two slots at once: drafts verified by
    // sample-and-compare never change what plain decoding would produce.
    // (The draft model's drafts at temperature > 0 carry probabilities and
    // are verified by rejection sampling: same distribution, other samples;
    // see DraftModelAtTemperatureIsVerifiedByRejectionSampling.)
    auto requests = [](const cria::vocab::Vocab& v) {
        std::vector<GenerationRequest> out;
        out.push_back(greedy(v, "Once upon a time, there was a cat. The cat was", 60));
        out.push_back(greedy(v, kPrompts[1], 60));
        out.back().sampling.temp = 0.8f;
        out.back().sampling.seed = 11;
        return out;
    };
    std::vector<std::string> plain;
    {
        RuntimeBackend backend(model(), params(2));
        Scheduler s(backend, {.n_slots = 2});
        std::vector<std::shared_ptr<RequestHandle>> hs;
        for (auto& r : requests(backend.vocab())) hs.push_back(s.submit(r));
        for (auto& h : hs) plain.push_back(wait(h).text);
        EXPECT_EQ(s.stats().spec_drafted_total, 0u);
    }
    for (bool with_model : {false, true}) {
        SCOPED_TRACE(with_model ? "ngram-simple + draft model" : "ngram-simple");
        RuntimeBackend backend(model(), params(2));
        SchedulerOptions o{.n_slots = 2};
        o.speculative = speculation(with_model);
        Scheduler s(backend, o);
        std::vector<std::shared_ptr<RequestHandle>> hs;
        for (auto& r : requests(backend.vocab())) hs.push_back(s.submit(r));
        int32_t drafted = 0, accepted = 0;
        for (size_t i = 0; i < hs.size(); ++i) {
            const Result r = wait(hs[i]);
            if (!with_model || i == 0) {
                EXPECT_EQ(r.text, plain[i]) << i;
            }
            EXPECT_EQ(r.done.n_generated, 60);
            drafted += r.done.n_drafted;
            accepted += r.done.n_draft_accepted;
        }
        const auto st = s.stats();
        EXPECT_GT(drafted, 0);
        EXPECT_GT(accepted, 0);
        EXPECT_EQ(st.spec_drafted_total, static_cast<uint64_t>(drafted));
        EXPECT_EQ(st.spec_accepted_total, static_cast<uint64_t>(accepted));
        EXPECT_GT(st.spec_verify_steps, 0u);
        // Accepted drafts save steps: fewer decode calls than tokens.
        if (with_model) {
            EXPECT_LT(st.decode_calls, 60u);
        }
    }
}

TEST(Scheduler, SpeculationRollsBackThroughTheBackendsCheckpoints) {
    // Each verify batch [last, d1..dn] of a slot opens a checkpoint of n + 1
    // positions in the backend, and verification commits 1 + the accepted
    // draft tokens: the counts add up to the request's drafted and accepted tokens.
    std::string plain;
    {
        RuntimeBackend backend(model(), params(1));
        Scheduler s(backend, {.n_slots = 1});
        plain = wait(s.submit(greedy(backend.vocab(), kPrompts[1], 48))).text;
    }
    RuntimeBackend runtime(model(), params(1));
    CountingBackend backend(runtime);
    SchedulerOptions o{.n_slots = 1};
    o.speculative = speculation(false);
    Scheduler s(backend, o);
    const Result r = wait(s.submit(greedy(backend.vocab(), kPrompts[1], 48)));
    EXPECT_EQ(r.text, plain);
    ASSERT_GT(r.done.n_drafted, 0);
    ASSERT_GT(r.done.n_drafted, r.done.n_draft_accepted);
    int32_t drafted = 0, accepted = 0;
    for (const auto& c : backend.checkpoints) {
        EXPECT_EQ(c.seq, 0);
        ASSERT_GE(c.n_positions, 2);  // `last` and at least one draft token
        ASSERT_GE(c.n_accepted, 1);
        EXPECT_LE(c.n_accepted, c.n_positions);
        drafted += c.n_positions - 1;
        accepted += c.n_accepted - 1;
    }
    EXPECT_EQ(drafted, r.done.n_drafted);
    EXPECT_EQ(accepted, r.done.n_draft_accepted);
}

TEST(ReferenceBackend, CheckpointsKeepTheAcceptedPositions) {
    ReferenceBackend b(model(), 1, 64);
    std::vector<float> logits;
    const std::vector<BatchToken> prompt = {{1, 0, 0, false}, {300, 1, 0, true}};
    b.decode(prompt, logits);
    const auto after_prompt = logits;
    EXPECT_FALSE(b.checkpoint_commit(0, 0));  // none open
    ASSERT_TRUE(b.checkpoint_begin(0, 3));
    EXPECT_FALSE(b.checkpoint_begin(0, 3));  // one is open
    b.decode(std::vector<BatchToken>{{5, 2, 0, false}, {6, 3, 0, false}, {7, 4, 0, true}}, logits);
    EXPECT_FALSE(b.checkpoint_commit(0, 4));  // more than the batch
    ASSERT_TRUE(b.checkpoint_commit(0, 1));   // keeps position 2
    b.decode(std::vector<BatchToken>{{9, 3, 0, true}}, logits);  // continues at 3
    ASSERT_TRUE(b.checkpoint_begin(0, 2));
    b.decode(std::vector<BatchToken>{{5, 4, 0, false}}, logits);
    ASSERT_TRUE(b.checkpoint_commit(0, 0));  // back to positions 0..3
    EXPECT_TRUE(b.seq_keep_prefix(0, 1));
    b.decode(std::vector<BatchToken>{{300, 1, 0, true}}, logits);
    EXPECT_EQ(logits, after_prompt);
}

TEST(Scheduler, AdaptiveDraftingPausesADraftModelThatDoesNotPay) {
    // A draft model that is not the target (austen-1m for stories260K would
    // not share a vocabulary, so: stories260K drafting for itself at a high
    // temperature, where sample-and-compare rejects most drafts) costs a
    // draft and a larger verify per step. With adaptive drafting the slot
    // first decodes plainly, then drafts only in probes; without it, every
    // step drafts. The grammar (any text of letters and punctuation) makes
    // the verifier sample and compare: rejection sampling needs the full
    // distribution, a grammar checks only the chosen token. So the output
    // is the plain one either way.
    // The costs are the test's, not the machine's (whose load made the
    // controller see drafting as cheap now and then): every timed interval
    // (a target decode of any size, a draft) takes one tick of a clock that
    // moves only when read. So a draft costs what a plain decode does and a
    // larger verify costs no more: a draft of n tokens pays only when it is
    // expected to yield over 2 tokens, which this draft never does.
    auto request = [](const cria::vocab::Vocab& v) {
        GenerationRequest r = greedy(v, kPrompts[1], 64);
        r.sampling.temp = 3.0f;
        r.sampling.seed = 5;
        r.sampling.ignore_eos = true;
        r.grammar = R"(root ::= [a-zA-Z .,!?'"\n-]*)";
        return r;
    };
    std::string plain;
    {
        RuntimeBackend backend(model(), params(1));
        Scheduler s(backend, {.n_slots = 1});
        plain = wait(s.submit(request(backend.vocab()))).text;
    }
    int32_t drafted[2] = {0, 0};
    for (bool adaptive : {false, true}) {
        SCOPED_TRACE(adaptive ? "adaptive" : "fixed");
        RuntimeBackend backend(model(), params(1));
        SchedulerOptions o{.n_slots = 1};
        o.speculative.types = {};
        o.speculative.draft_model = model();
        o.speculative.n_max = 4;
        o.speculative.adaptive = adaptive;
        // Read on the scheduler's thread only.
        o.speculative.clock = [ticks = std::make_shared<double>(0.0)] { return ++*ticks; };
        Scheduler s(backend, o);
        const Result r = wait(s.submit(request(backend.vocab())));
        EXPECT_EQ(r.text, plain);
        EXPECT_EQ(r.done.n_generated, 64);
        drafted[adaptive] = r.done.n_drafted;
    }
    EXPECT_GE(drafted[0], 40);             // fixed: drafts most steps (the draft stops below p_min)
    EXPECT_LE(drafted[1], drafted[0] / 4) << drafted[1];  // adaptive: probes only
}

TEST(Scheduler, SpeculativeRequestsAreCheckedAgainstTheServer) {
    RuntimeBackend backend(model(), params(1));
    {
        Scheduler plain(backend, {.n_slots = 1});
        auto g = greedy(backend.vocab(), kPrompts[0], 4);
        g.speculative.given = true;
        g.speculative.n_max = 4;
        EXPECT_THROW(plain.submit(g), cria::Error);  // no drafter on this server
        g.speculative.n_max = 0;                      // "off" is always fine
        EXPECT_EQ(wait(plain.submit(g)).done.finish_reason, "length");
    }
    SchedulerOptions o{.n_slots = 1};
    o.speculative = speculation(true);
    o.speculative.draft.p_min = 0.75f;
    Scheduler s(backend, o);
    auto g = greedy(backend.vocab(), "Once upon a time, there was a cat. The cat was", 40);
    g.speculative.given = true;
    g.speculative.type = "ngram-map-k";
    EXPECT_THROW(s.submit(g), cria::Error);  // not one of the server's drafters
    g.speculative.type = "";
    g.speculative.p_min = 0.5f;  // per request, over the server's 0.75
    EXPECT_GT(wait(s.submit(g)).done.n_drafted, 0);
    g.speculative.p_min = -1.0f;  // the server's
    EXPECT_GT(wait(s.submit(g)).done.n_drafted, 0);
    // Off for one request, or only one of the drafters.
    g.speculative.n_max = 0;
    EXPECT_EQ(wait(s.submit(g)).done.n_drafted, 0);
    g.speculative.n_max = 2;
    g.speculative.type = "draft";
    const Result r = wait(s.submit(g));
    EXPECT_GT(r.done.n_drafted, 0);
    EXPECT_EQ(r.done.n_drafted, r.done.n_draft_accepted);  // the target drafting for itself
}

TEST(Scheduler, PenaltiesSeeThePromptAsInCriaRun) {
    // The same request through the scheduler (cria serve, the terminal chat)
    // and through runtime::generate (cria run) gives the same tokens: the
    // repetition penalty counts the prompt's tokens in both. Without the
    // prompt, the penalty would let the model repeat the prompt's words.
    RuntimeBackend backend(model(), params(1));
    auto g = greedy(backend.vocab(), "Once upon a time, there was a little girl. The little girl", 32);
    g.sampling.penalty_repeat = 1.5f;
    g.sampling.penalty_freq = 0.5f;
    g.sampling.dry_multiplier = 0.8f;

    auto loaded = cria::model::Model::load(model());
    cria::runtime::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    cria::runtime::Context ctx(*loaded, cp);
    cria::sampling::ChainContext cc;
    cc.vocab = &backend.vocab();
    cc.n_ctx = backend.n_ctx_per_seq();
    cc.n_ctx_train = backend.n_ctx_per_seq();
    auto chain = cria::sampling::build_chain(g.sampling, cc);
    const auto expected = cria::runtime::generate(ctx, backend.vocab(), chain, g.prompt, 32);
    cria::vocab::StreamingDetokenizer detok(backend.vocab());
    std::string expected_text;
    for (auto t : expected.tokens) expected_text += detok.push(t);
    expected_text += detok.flush();

    Scheduler s(backend, {.n_slots = 1});
    EXPECT_EQ(wait(s.submit(g)).text, expected_text);
}

TEST(Scheduler, DraftModelAtTemperatureIsVerifiedByRejectionSampling) {
    // stories260K drafting for itself at temperature 1.5: the draft's
    // distribution q is the target's p, so rejection sampling accepts
    // (nearly) every drafted token, where sample-and-compare would keep a
    // token only when two independent samples agree. The seed makes it
    // reproducible: the draft chain and the verifier are seeded from it.
    auto request = [](const cria::vocab::Vocab& v, uint32_t seed) {
        GenerationRequest r = greedy(v, kPrompts[1], 48);
        r.sampling.temp = 1.5f;
        r.sampling.seed = seed;
        return r;
    };
    RuntimeBackend backend(model(), params(1));
    SchedulerOptions o{.n_slots = 1};
    o.speculative.types = {};
    o.speculative.draft_model = model();
    o.speculative.n_max = 4;
    o.speculative.draft.p_min = 0.0f;  // draft every position
    o.speculative.adaptive = false;
    Scheduler s(backend, o);
    const Result a = wait(s.submit(request(backend.vocab(), 7)));
    const Result b = wait(s.submit(request(backend.vocab(), 7)));
    const Result c = wait(s.submit(request(backend.vocab(), 8)));
    EXPECT_EQ(a.text, b.text);
    EXPECT_NE(a.text, c.text);
    EXPECT_EQ(a.done.n_generated, 48);
    EXPECT_GT(a.done.n_drafted, 20);
    EXPECT_GE(a.done.n_draft_accepted * 10, a.done.n_drafted * 9) << a.done.n_draft_accepted << " of " << a.done.n_drafted;
    const auto st = s.stats();
    EXPECT_EQ(st.spec_drafted_total, static_cast<uint64_t>(a.done.n_drafted + b.done.n_drafted + c.done.n_drafted));
    EXPECT_EQ(st.spec_accepted_total,
              static_cast<uint64_t>(a.done.n_draft_accepted + b.done.n_draft_accepted + c.done.n_draft_accepted));
}

class SchedulerDrafters : public ::testing::TestWithParam<cria::spec::SpecType> {};

TEST_P(SchedulerDrafters, GreedyOutputIsThePlainOne) {
    // Every drafter, through the server's path (two slots in one batch, the
    // speculative step per slot), gives plain decoding's greedy output.
    using cria::spec::SpecType;
    std::vector<std::string> plain;
    {
        RuntimeBackend backend(model(), params(2));
        // Both start in the first step, in both runs: the batches do not depend on the thread timing.
        Scheduler s(backend, {.n_slots = 2, .start_paused = true});
        std::vector<std::shared_ptr<RequestHandle>> hs;
        for (const char* p : {kPrompts[0], kPrompts[1]}) hs.push_back(s.submit(greedy(backend.vocab(), p, 48)));
        s.resume();
        for (auto& h : hs) plain.push_back(wait(h).text);
    }
    RuntimeBackend backend(model(), params(2));
    SchedulerOptions o{.n_slots = 2};
    o.speculative.types = {GetParam()};
    if (GetParam() == SpecType::Draft) o.speculative.draft_model = model();
    o.speculative.n_max = 8;
    o.speculative.adaptive = false;
    o.speculative.ngram_simple = {2, 8, 1};
    o.speculative.ngram_map_k = {2, 8, 1};
    o.speculative.ngram_map_k4v = {2, 4, 1};
    o.speculative.ngram_mod = {3, 1, 8};
    o.start_paused = true;
    Scheduler s(backend, o);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (const char* p : {kPrompts[0], kPrompts[1]}) hs.push_back(s.submit(greedy(backend.vocab(), p, 48)));
    s.resume();
    for (size_t i = 0; i < hs.size(); ++i) EXPECT_EQ(wait(hs[i]).text, plain[i]) << i;
    EXPECT_GT(s.stats().spec_drafted_total, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SchedulerDrafters,
                         ::testing::Values(cria::spec::SpecType::Draft, cria::spec::SpecType::NgramSimple,
                                           cria::spec::SpecType::NgramMapK, cria::spec::SpecType::NgramMapK4v,
                                           cria::spec::SpecType::NgramMod, cria::spec::SpecType::NgramCache),
                         [](const auto& info) {
                             std::string s(cria::spec::spec_type_name(info.param));
                             std::erase(s, '-');
                             return s;
                         });

namespace {

// A backend whose slots draft with a FeatureRecorder (one per slot).
class RecordingBackend : public RuntimeBackend {
public:
    RecordingBackend(const std::string& path, const RuntimeBackendParams& p, std::vector<uint32_t> layers)
        : RuntimeBackend(path, p), layers_(std::move(layers)) {}
    std::vector<std::unique_ptr<cria::spec::Drafter>> make_drafters(const cria::spec::SpecParams&) override {
        auto d = std::make_unique<cria::test::FeatureRecorder>(layers_);
        recorders.push_back(d.get());
        std::vector<std::unique_ptr<cria::spec::Drafter>> out;
        out.push_back(std::move(d));
        return out;
    }
    std::vector<cria::test::FeatureRecorder*> recorders;

private:
    std::vector<uint32_t> layers_;
};

}  // namespace

TEST(Scheduler, DraftersGetTheTargetFeaturesOfTheirSlot) {
    // Two slots in one batch: each slot's drafter gets the streams of its own
    // accepted tokens, equal to a one-prefill capture of that slot's text.
    // Both requests start in the first step (the scheduler starts paused):
    // a request that reaches a running loop after the other's prompt was
    // decoded borrows that slot's cells of their common prefix (the BOS
    // token), and its prompt then attends over non-adjacent cells. That
    // prompt used to be attended one query at a time, and with the f16
    // cache its features were up to ~1e-2 from a one-prefill capture (over
    // this test's 1e-3); it now takes the prefill's path, bit for bit
    // (AttentionPaths tests), but the verify steps still differ from a
    // prefill by what f16 rounding makes of float reordering (rarely near
    // 1e-3), so the layout stays fixed.
    const auto m = cria::model::Model::load(model());
    const std::vector<uint32_t> layers{1, m->hparams().n_layer};
    RecordingBackend backend(model(), params(2), layers);
    SchedulerOptions o{.n_slots = 2};
    o.speculative.types = {cria::spec::SpecType::NgramSimple};  // any: the backend supplies the drafters
    o.speculative.n_max = 4;
    o.speculative.adaptive = false;
    o.start_paused = true;
    Scheduler s(backend, o);
    ASSERT_EQ(backend.recorders.size(), 2u);
    std::vector<std::shared_ptr<RequestHandle>> hs;
    for (const char* p : {kPrompts[0], kPrompts[1]}) {
        GenerationRequest g = greedy(backend.vocab(), p, 40);
        g.top_logprobs = 0;  // the generated token ids come with their log-probabilities
        hs.push_back(s.submit(std::move(g)));
    }
    s.resume();
    std::vector<std::vector<TokenId>> generated;
    for (auto& h : hs) {
        generated.emplace_back();
        for (const TokenLogprob& t : wait(h).logprobs) generated.back().push_back(t.id);
    }
    EXPECT_GT(s.stats().spec_accepted_total, 0u) << "the test wants multi-token verify steps";

    for (size_t slot = 0; slot < 2; ++slot) {
        // Which recorder served which prompt: the one whose rows start with the prompt's.
        const auto prompt = backend.vocab().tokenize(kPrompts[slot], true, false);
        std::vector<TokenId> text = prompt;
        text.insert(text.end(), generated[slot].begin(), generated[slot].end());
        cria::runtime::ContextParams cp;
        cp.n_ctx = 256;
        cp.n_threads = 2;
        cp.capture_layers = layers;
        cria::runtime::Context ref(*m, cp);
        ASSERT_EQ(ref.decode(cria::runtime::Batch::from_tokens(text, 0, 0, true)), 0);
        bool matched = false;
        std::string seen;
        for (const cria::test::FeatureRecorder* r : backend.recorders) {
            // A slot's rows start at the end of its prompt, or earlier when the
            // scheduler split the prompt into chunks (timing decides): every
            // row must still be that position's features of the slot's text.
            if (r->rows().empty() || r->rows().begin()->first > static_cast<int32_t>(prompt.size()) - 1) continue;
            bool all = true;
            size_t checked = 0;
            int32_t bad_pos = -1;
            float bad_diff = 0;
            for (const auto& [pos, row] : r->rows()) {
                // A draft past the last generated token (the request ended
                // inside a verify step) has no position in the text to compare.
                if (static_cast<size_t>(pos) >= text.size()) continue;
                const auto want = ref.features(pos);
                for (size_t c = 0; c < row.size() && all; ++c) {
                    all = std::abs(row[c] - want[c]) < 1e-3f;
                    if (!all) bad_pos = pos, bad_diff = std::abs(row[c] - want[c]);
                }
                ++checked;
            }
            if (all && checked > 10) matched = true;
            seen += " [rows from " + std::to_string(r->rows().begin()->first) + ", " + std::to_string(checked) +
                    " checked" + (all ? "" : ", position " + std::to_string(bad_pos) + " off by " + std::to_string(bad_diff)) +
                    "]";
        }
        EXPECT_TRUE(matched) << "no drafter saw slot " << slot << "'s streams (" << text.size() << " tokens):" << seen;
    }
}
