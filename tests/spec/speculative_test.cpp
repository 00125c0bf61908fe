// Speculative generation against plain generation on real models: at
// temperature 0 the output must be identical for every drafter, with drafts
// both accepted and rejected along the way; the cache must hold exactly the
// accepted tokens afterwards.

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "cria/core/error.h"
#include "cria/memory/hybrid_memory.h"
#include "cria/model/model.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/spec/speculative.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

struct Target {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<vocab::Vocab> vocab;
};

const Target& target(const std::string& rel) {
    static std::map<std::string, Target> cache;
    auto& t = cache[rel];
    if (!t.model) {
        t.model = model::Model::load(test::model_path(rel).string());
        t.vocab = std::make_unique<vocab::Vocab>(vocab::Vocab::from_gguf(t.model->file()));
    }
    return t;
}

runtime::ContextParams context_params() {
    runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    cp.type_k = ElementType::F32;
    cp.type_v = ElementType::F32;
    return cp;
}

sampling::Chain greedy_chain(const vocab::Vocab& v, float repeat_penalty = 1.0f) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sp.penalty_repeat = repeat_penalty;
    sampling::ChainContext cc;
    cc.vocab = &v;
    return sampling::build_chain(sp, cc);
}

std::vector<TokenId> plain(const Target& t, const std::string& prompt, int n, float repeat_penalty = 1.0f) {
    runtime::Context ctx(*t.model, context_params());
    auto chain = greedy_chain(*t.vocab, repeat_penalty);
    return runtime::generate(ctx, *t.vocab, chain, t.vocab->tokenize(prompt, true, true), n).tokens;
}

struct SpecRun {
    std::vector<TokenId> tokens;
    Metrics metrics;
    int32_t pos_max = 0;
};

SpecRun speculative(const Target& t, const std::string& prompt, int n, SpecParams params, float repeat_penalty = 1.0f) {
    runtime::Context ctx(*t.model, context_params());
    auto chain = greedy_chain(*t.vocab, repeat_penalty);
    Speculator s(params, make_drafters(params, ctx, *t.vocab));
    const auto prompt_tokens = t.vocab->tokenize(prompt, true, true);
    SpecRun r;
    r.tokens = s.generate(ctx, *t.vocab, chain, prompt_tokens, n).tokens;
    r.metrics = s.metrics();
    r.pos_max = ctx.memory_seq_pos_max(0);
    // The cache holds the prompt and every emitted token but the last (not decoded yet).
    EXPECT_EQ(r.pos_max, static_cast<int32_t>(prompt_tokens.size() + r.tokens.size()) - 2);
    return r;
}

SpecParams forced(SpecType type) {
    SpecParams p;
    p.types = {type};
    p.adaptive = false;  // draft at every step, so verification is exercised
    p.n_max = 8;
    p.ngram_simple = {2, 8, 1};
    p.ngram_map_k = {2, 8, 1};
    p.ngram_map_k4v = {2, 4, 1};
    p.ngram_mod = {3, 1, 8};
    return p;
}

constexpr const char* kAustenDraft = "austen-1m/austen-1m-f32.gguf";
constexpr const char* kStories = "stories260K/stories260K.gguf";
constexpr const char* kPrompt = "Elizabeth looked at her sister and said";

class Identity : public ::testing::TestWithParam<SpecType> {};

TEST_P(Identity, AustenTemperatureZeroMatchesPlain) {
    const auto& t = target("austen-7m/austen-7m-f32.gguf");
    const int n = 64;
    const auto expected = plain(t, kPrompt, n);
    SpecParams p = forced(GetParam());
    if (GetParam() == SpecType::Draft) p.draft_model = test::model_path(kAustenDraft).string();
    const auto got = speculative(t, kPrompt, n, p);
    EXPECT_EQ(got.tokens, expected);
    // Drafts were made, some rejected: both paths of the verifier ran.
    EXPECT_GT(got.metrics.tokens_drafted(), 0) << got.metrics.format();
    EXPECT_LT(got.metrics.tokens_accepted(), got.metrics.tokens_drafted()) << got.metrics.format();
}

TEST_P(Identity, StoriesTemperatureZeroMatchesPlain) {
    const auto& t = target(kStories);
    const int n = 128;
    const std::string prompt = "Once upon a time";
    const auto expected = plain(t, prompt, n);
    SpecParams p = forced(GetParam());
    if (GetParam() == SpecType::Draft) p.draft_model = test::model_path(kStories).string();
    const auto got = speculative(t, prompt, n, p);
    EXPECT_EQ(got.tokens, expected);
    EXPECT_GT(got.metrics.tokens_drafted(), 0) << got.metrics.format();
}

INSTANTIATE_TEST_SUITE_P(Drafters, Identity,
                         ::testing::Values(SpecType::Draft, SpecType::NgramSimple, SpecType::NgramMapK,
                                           SpecType::NgramMapK4v, SpecType::NgramMod, SpecType::NgramCache),
                         [](const auto& info) {
                             std::string s(spec_type_name(info.param));
                             std::erase(s, '-');
                             return s;
                         });

TEST(Speculative, CombinedDraftersAndPenaltiesMatchPlain) {
    // Stateful samplers (repetition penalty) see every accepted token in order.
    const auto& t = target("austen-7m/austen-7m-f32.gguf");
    const auto expected = plain(t, kPrompt, 80, 1.3f);
    SpecParams p = forced(SpecType::NgramSimple);
    p.types = {SpecType::NgramSimple, SpecType::NgramMod, SpecType::Draft};
    p.draft_model = test::model_path(kAustenDraft).string();
    const auto got = speculative(t, kPrompt, 80, p, 1.3f);
    EXPECT_EQ(got.tokens, expected);
    ASSERT_EQ(got.metrics.drafters.size(), 3u);
    EXPECT_EQ(got.metrics.drafters[0].name, "ngram_simple");
    EXPECT_EQ(got.metrics.drafters[2].name, "draft");
    EXPECT_GT(got.metrics.drafters[2].n_tokens_drafted, 0);
}

TEST(Speculative, AdaptiveStillMatchesPlain) {
    const auto& t = target("austen-7m/austen-7m-f32.gguf");
    const auto expected = plain(t, kPrompt, 96);
    SpecParams p = forced(SpecType::Draft);
    p.adaptive = true;
    p.draft_model = test::model_path(kAustenDraft).string();
    const auto got = speculative(t, kPrompt, 96, p);
    EXPECT_EQ(got.tokens, expected);
}

TEST(Speculative, SameSeedSameOutputWithADraftModelAtTemperature) {
    // The draft model samples its drafts at temperature > 0 and the verifier
    // draws uniforms: both are seeded from the request's seed.
    const auto& t = target(kStories);
    const auto prompt = t.vocab->tokenize("Once upon a time", true, true);
    SpecParams p = forced(SpecType::Draft);
    p.draft_model = test::model_path(kStories).string();
    p.draft.p_min = 0.0f;
    auto run = [&](uint32_t seed) {
        runtime::Context ctx(*t.model, context_params());
        sampling::SamplingParams sp;
        sp.temp = 0.9f;
        sp.seed = seed;
        sampling::ChainContext cc;
        cc.vocab = t.vocab.get();
        auto chain = sampling::build_chain(sp, cc);
        Speculator s(p, make_drafters(p, ctx, *t.vocab));
        s.set_sampling(sp);
        const auto tokens = s.generate(ctx, *t.vocab, chain, prompt, 64).tokens;
        EXPECT_GT(s.metrics().tokens_drafted(), 0);
        return tokens;
    };
    const auto a = run(1234);
    EXPECT_EQ(run(1234), a);
    EXPECT_NE(run(99), a);
}

TEST(Speculative, DraftModelVocabularyMustMatch) {
    const auto& a = target("austen-7m/austen-7m-f32.gguf");
    const auto& s = target(kStories);
    EXPECT_THROW(check_vocab_compatible(*a.vocab, *s.vocab), Error);
    EXPECT_NO_THROW(check_vocab_compatible(*a.vocab, *target(kAustenDraft).vocab));
}

TEST(Speculative, RollbackLeavesTheCacheAsIfRejectedTokensWereNeverDecoded) {
    // After a speculative run with many rejections, decoding one more token must
    // give the same logits as after plain generation.
    const auto& t = target(kStories);
    const std::string prompt = "Once upon a time";
    const auto prompt_tokens = t.vocab->tokenize(prompt, true, true);
    const int n = 64;

    runtime::Context plain_ctx(*t.model, context_params());
    auto chain = greedy_chain(*t.vocab);
    const auto expected = runtime::generate(plain_ctx, *t.vocab, chain, prompt_tokens, n).tokens;

    runtime::Context spec_ctx(*t.model, context_params());
    auto chain2 = greedy_chain(*t.vocab);
    SpecParams p = forced(SpecType::NgramSimple);
    Speculator s(p, make_drafters(p, spec_ctx, *t.vocab));
    const auto got = s.generate(spec_ctx, *t.vocab, chain2, prompt_tokens, n).tokens;
    ASSERT_EQ(got, expected);
    ASSERT_GT(s.metrics().tokens_drafted(), s.metrics().tokens_accepted());
    EXPECT_EQ(spec_ctx.memory_seq_pos_max(0), plain_ctx.memory_seq_pos_max(0));

    const auto pos = static_cast<int32_t>(prompt_tokens.size() + got.size() - 1);
    for (auto* ctx : {&plain_ctx, &spec_ctx}) ASSERT_EQ(ctx->decode(runtime::Batch::from_tokens({got.back()}, pos)), 0);
    const auto a = plain_ctx.logits(-1), b = spec_ctx.logits(-1);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f) << "logit " << i;
}

TEST(Speculative, StopsAtNPredictAndOnCallback) {
    const auto& t = target(kStories);
    const auto expected = plain(t, "Once upon a time", 17);
    SpecParams p = forced(SpecType::NgramSimple);
    const auto got = speculative(t, "Once upon a time", 17, p);
    EXPECT_EQ(got.tokens, expected);

    runtime::Context ctx(*t.model, context_params());
    auto chain = greedy_chain(*t.vocab);
    Speculator s(p, make_drafters(p, ctx, *t.vocab));
    int seen = 0;
    const auto r = s.generate(ctx, *t.vocab, chain, t.vocab->tokenize("Once upon a time", true, true), 100,
                              [&](TokenId) { return ++seen < 5; });
    EXPECT_EQ(r.tokens.size(), 5u);
    EXPECT_EQ(r.stop, runtime::StopReason::Callback);
}

TEST(Speculative, UnknownOrUnavailableDrafters) {
    EXPECT_THROW(parse_spec_types("ngram-simple,eagle"), Error);
    EXPECT_EQ(parse_spec_types("ngram_simple,ngram-mod,ngram-simple").size(), 2u);
    EXPECT_TRUE(parse_spec_types("none").empty());
    const auto& t = target(kStories);
    runtime::Context ctx(*t.model, context_params());
    SpecParams p;
    p.types = {SpecType::Draft};
    EXPECT_THROW(make_drafters(p, ctx, *t.vocab), Error);  // no -md
    p.types = {SpecType::NgramCache};
    p.ngram_cache.static_path = (test::temp_dir() / "missing.bin").string();
    EXPECT_THROW(make_drafters(p, ctx, *t.vocab), Error);  // no such statistics file
}

TEST(DrafterRegistry, EveryTypeIsRegisteredOnceInLlamaCppOrder) {
    std::vector<SpecType> order;
    for (const auto& spec : drafter_registry()) order.push_back(spec.type);
    EXPECT_EQ(order, (std::vector<SpecType>{SpecType::NgramSimple, SpecType::NgramMapK, SpecType::NgramMapK4v,
                                            SpecType::NgramMod, SpecType::NgramCache, SpecType::Mtp, SpecType::Dflash, SpecType::Dspark,
                                            SpecType::Eagle3,
                                            SpecType::Draft}));
    // make_drafters follows the registry, not the order of --spec-type.
    const auto& t = target(kStories);
    runtime::Context ctx(*t.model, context_params());
    SpecParams p;
    p.types = {SpecType::NgramMod, SpecType::NgramSimple};
    p.draft_model = test::model_path(kStories).string();
    const auto drafters = make_drafters(p, ctx, *t.vocab);
    ASSERT_EQ(drafters.size(), 3u);
    EXPECT_EQ(drafters[0]->name(), "ngram_simple");
    EXPECT_EQ(drafters[1]->name(), "ngram_mod");
    EXPECT_EQ(drafters[2]->name(), "draft");
}

// The server selects a drafter per request by its --spec-type spelling.
TEST(DrafterRegistry, DrafterNamesMapToTheirTypes) {
    EXPECT_EQ(drafter_type_name("ngram_simple"), "ngram-simple");
    EXPECT_EQ(drafter_type_name("ngram_map_k4v"), "ngram-map-k4v");
    EXPECT_EQ(drafter_type_name("draft"), "draft");
    EXPECT_EQ(drafter_type_name("eagle3"), "draft-eagle3");
    EXPECT_EQ(drafter_type_name("dflash"), "draft-dflash");
    EXPECT_EQ(drafter_type_name("dspark"), "draft-dspark");
    EXPECT_EQ(drafter_type_name("mtp"), "draft-mtp");
    EXPECT_EQ(drafter_type_name("feature_recorder"), "feature-recorder");  // not a registered type
}

// Proposes a fixed continuation and records what the step told it.
class ScriptedDrafter final : public Drafter {
public:
    explicit ScriptedDrafter(std::vector<TokenId> tokens) : tokens_(std::move(tokens)) {}
    std::string_view name() const override { return "scripted"; }
    void begin(const BeginInput&) override { ++begun; }
    void draft(const DraftInput& in, int n_max, Draft& out) override {
        EXPECT_EQ(in.pos_last, static_cast<int32_t>(in.history.size()));
        EXPECT_TRUE(in.features.empty());
        for (int i = 0; i < n_max && i < static_cast<int>(tokens_.size()); ++i) out.tokens.push_back(tokens_[i]);
    }
    void accept(int n) override { accepted.push_back(n); }
    void end() override { ++ended; }
    int n_max() const override { return 8; }
    int begun = 0, ended = 0;
    std::vector<int> accepted;

private:
    std::vector<TokenId> tokens_;
};

// The target's memory through a Context, recording the step's checkpoint calls.
class RecordingMemory final : public TargetMemory {
public:
    explicit RecordingMemory(runtime::Context& ctx) : inner_(ctx) {}
    bool checkpoint_begin(int32_t seq, int32_t n) override {
        calls.push_back({'b', seq, n});
        return inner_.checkpoint_begin(seq, n);
    }
    bool checkpoint_commit(int32_t seq, int32_t n) override {
        calls.push_back({'c', seq, n});
        return inner_.checkpoint_commit(seq, n);
    }
    struct Call {
        char kind;  // 'b'egin, 'c'ommit
        int32_t seq, n;
        bool operator==(const Call&) const = default;
    };
    std::vector<Call> calls;

private:
    ContextMemory inner_;
};

TEST(SpeculativeStep, VerifiesRollsBackAndFeedsBackWithSeveralSequencesInOneBatch) {
    // Two sequences share one target decode, as server slots do. Greedy
    // drafts of the plain continuation are accepted up to where the script
    // departs from it; the rejected cells are rolled back per sequence.
    const auto& t = target(kStories);
    const auto prompt = t.vocab->tokenize("Once upon a time", true, true);
    const auto expected = plain(t, "Once upon a time", 12);
    ASSERT_EQ(expected.size(), 12u);
    runtime::ContextParams cp = context_params();
    cp.n_seq_max = 2;
    runtime::Context ctx(*t.model, cp);
    for (int32_t seq : {0, 1}) ASSERT_EQ(ctx.decode(runtime::Batch::from_tokens(prompt, 0, seq)), 0);

    // Sequence 0 drafts expected[1..3] then a wrong token; sequence 1 a wrong first token.
    ScriptedDrafter right({expected[1], expected[2], expected[3], expected[4] == 3 ? 4 : 3});
    ScriptedDrafter wrong({expected[1] == 3 ? 4 : 3});
    SpeculativeStep steps[2] = {SpeculativeStep({&right}, false, static_cast<int32_t>(t.vocab->size())),
                                SpeculativeStep({&wrong}, false, static_cast<int32_t>(t.vocab->size()))};
    StepRequest request;
    request.n_max = 8;
    request.sampling.temp = 0.0f;
    std::vector<TokenId> history[2] = {prompt, prompt};
    for (int32_t seq : {0, 1}) steps[seq].begin(seq, history[seq], request);
    EXPECT_EQ(right.begun, 1);

    runtime::Batch batch;
    size_t first_row[2];
    RecordingMemory memory(ctx);
    for (int32_t seq : {0, 1}) {
        first_row[seq] = batch.size();
        steps[seq].prepare(history[seq], expected[0], 8, memory, batch);
    }
    EXPECT_EQ(batch.size(), 5u + 2u);
    // A checkpoint of each verify batch: [last, d1..dn] is n + 1 positions.
    using Call = RecordingMemory::Call;
    EXPECT_EQ(memory.calls, (std::vector<Call>{{'b', 0, 5}, {'b', 1, 2}}));
    ASSERT_EQ(ctx.decode(batch), 0);
    std::vector<TokenId> got[2];
    for (int32_t seq : {0, 1}) {
        auto chain = greedy_chain(*t.vocab);
        const LogitRow rows = [&](int i) { return ctx.logits(static_cast<int32_t>(first_row[seq]) + i); };
        const auto out = steps[seq].finish(rows, chain, 1.0, history[seq],
                                           [&](TokenId tok, std::span<const float>) {
                                               got[seq].push_back(tok);
                                               return true;
                                           });
        EXPECT_FALSE(out.done);
        EXPECT_EQ(out.next, got[seq].back());
    }
    // Sequence 0: three accepted, then the target's own token.
    EXPECT_EQ(got[0], std::vector<TokenId>(expected.begin() + 1, expected.begin() + 5));
    EXPECT_EQ(right.accepted, std::vector<int>{3});
    EXPECT_EQ(history[0].size(), prompt.size() + 4);
    EXPECT_EQ(ctx.memory_seq_pos_max(0), static_cast<int32_t>(prompt.size() + 3));
    // Sequence 1: nothing accepted, the target's token instead.
    EXPECT_EQ(got[1], std::vector<TokenId>{expected[1]});
    EXPECT_EQ(wrong.accepted, std::vector<int>{0});
    EXPECT_EQ(ctx.memory_seq_pos_max(1), static_cast<int32_t>(prompt.size()));
    EXPECT_EQ(steps[0].metrics().tokens_drafted(), 4);
    EXPECT_EQ(steps[0].metrics().tokens_accepted(), 3);
    EXPECT_EQ(steps[1].metrics().n_verify_steps, 1);
    // Commits keep `last` and the accepted tokens: 1 + 3 and 1 + 0.
    EXPECT_EQ(memory.calls, (std::vector<Call>{{'b', 0, 5}, {'b', 1, 2}, {'c', 0, 4}, {'c', 1, 1}}));
    for (auto& s : steps) s.end();
    EXPECT_EQ(right.ended, 1);

    // A plain step opens no checkpoint; a discarded one (its decode failed)
    // commits nothing, and the memory holds the history again.
    ScriptedDrafter none({});
    SpeculativeStep plain_step({&none}, false, static_cast<int32_t>(t.vocab->size()));
    plain_step.begin(1, history[1], request);
    memory.calls.clear();
    EXPECT_EQ(plain_step.prepare(history[1], got[1].back(), 8, memory).size(), 1u);
    EXPECT_TRUE(memory.calls.empty());
    steps[0].begin(0, history[0], request);
    EXPECT_EQ(steps[0].prepare(history[0], got[0].back(), 2, memory).size(), 3u);
    steps[0].discard();
    EXPECT_EQ(memory.calls, (std::vector<Call>{{'b', 0, 3}, {'c', 0, 0}}));
    EXPECT_EQ(ctx.memory_seq_pos_max(0), static_cast<int32_t>(history[0].size()) - 1);
}

// A memory that refuses every checkpoint.
class RefusingMemory final : public TargetMemory {
public:
    bool checkpoint_begin(int32_t, int32_t) override { return false; }
    bool checkpoint_commit(int32_t, int32_t) override { return false; }
};

TEST(SpeculativeStep, ARefusedCheckpointIsAnError) {
    ScriptedDrafter d({5, 6});
    SpeculativeStep step({&d}, false, 100);
    StepRequest request;
    request.n_max = 4;
    request.sampling.temp = 0.0f;
    const std::vector<TokenId> history = {1, 2, 3};
    step.begin(0, history, request);
    RefusingMemory refusing;
    EXPECT_THROW(step.prepare(history, 4, 4, refusing), Error);
    // Nothing is left open: a plain step needs no checkpoint.
    step.end();
    ScriptedDrafter none({});
    SpeculativeStep plain_step({&none}, false, 100);
    plain_step.begin(0, history, request);
    EXPECT_EQ(plain_step.prepare(history, 4, 4, refusing).size(), 1u);
}

TEST(SpeculativeStep, RollsBackAMemoryThatCannotTruncate) {
    // The target's memory is a router over its KV cache and a recurrent
    // state (no model layer lives in it yet, but it follows every sequence
    // operation). A recurrent state refuses to drop the rejected positions
    // (seq_rm), so the step must roll back through checkpoints; greedy
    // speculative output stays the plain one, and both memories hold
    // exactly the accepted tokens.
    const auto& t = target(kStories);
    const std::string prompt = "Once upon a time";
    const int n = 64;
    const auto expected = plain(t, prompt, n);
    const auto cp = context_params();
    const model::HParams& hp = t.model->hparams();
    memory::KvCacheParams kp;
    kp.n_cells = cp.n_ctx;
    kp.n_layer = hp.n_layer;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    kp.type_k = cp.type_k;
    kp.type_v = cp.type_v;
    std::vector<std::unique_ptr<memory::Memory>> children;
    children.push_back(std::make_unique<memory::KvCache>(kp));
    children.push_back(std::make_unique<memory::RecurrentMemory>(memory::RecurrentParams{1, 4, 4, 1}));
    std::vector<memory::HybridMemory::LayerPlacement> layers;
    for (uint32_t l = 0; l < hp.n_layer; ++l) layers.push_back({0, l});
    runtime::Context ctx(*t.model, cp, std::make_unique<memory::HybridMemory>(std::move(children), layers));
    auto chain = greedy_chain(*t.vocab);
    SpecParams p = forced(SpecType::NgramSimple);
    Speculator s(p, make_drafters(p, ctx, *t.vocab));
    const auto prompt_tokens = t.vocab->tokenize(prompt, true, true);
    const auto got = s.generate(ctx, *t.vocab, chain, prompt_tokens, n).tokens;
    EXPECT_EQ(got, expected);
    EXPECT_GT(s.metrics().tokens_drafted(), s.metrics().tokens_accepted()) << s.metrics().format();
    const auto last = static_cast<int32_t>(prompt_tokens.size() + got.size()) - 2;
    EXPECT_EQ(ctx.memory().child(0).seq_pos_max(0), last);
    EXPECT_EQ(ctx.memory().child(1).seq_pos_max(0), last);
    EXPECT_FALSE(ctx.memory_seq_rm(0, last, -1));  // the recurrent state cannot truncate
}

TEST(SpeculativeStep, DerivedSeedsDifferPerPurposeAndStayRandomWhenAsked) {
    EXPECT_NE(derive_seed(5, 1), derive_seed(5, 2));
    EXPECT_NE(derive_seed(5, 1), derive_seed(6, 1));
    EXPECT_EQ(derive_seed(5, 1), derive_seed(5, 1));
    EXPECT_EQ(derive_seed(sampling::kRandomSeed, 1), sampling::kRandomSeed);
}

}  // namespace

TEST(Speculative, TimesDraftsAndDecodesWithTheGivenClock) {
    // A clock that moves one millisecond per reading: every timed interval
    // (the prompt, each draft, each target decode) is one tick, so the
    // metrics count them, whatever the machine's load; adaptive drafting
    // sees the same times (SpecParams::clock is what the server's tests use).
    const auto& t = target(kStories);
    SpecParams p = forced(SpecType::NgramSimple);
    p.clock = [ticks = std::make_shared<double>(0.0)] { return ++*ticks; };
    const SpecRun r = speculative(t, "Once upon a time, there was a cat. The cat was", 40, p);
    const Metrics& m = r.metrics;
    ASSERT_GT(m.n_verify_steps, 0);
    EXPECT_DOUBLE_EQ(m.prompt_ms, 1.0);
    EXPECT_DOUBLE_EQ(m.verify_ms, static_cast<double>(m.n_verify_steps));
    EXPECT_DOUBLE_EQ(m.plain_ms, static_cast<double>(m.n_plain_steps));
    int64_t calls = 0;
    for (const DrafterMetrics& d : m.drafters) calls += d.n_calls;
    EXPECT_DOUBLE_EQ(m.draft_ms, static_cast<double>(calls));
}

}  // namespace cria::spec
