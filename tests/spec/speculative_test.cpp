// Speculative generation against plain generation on real models: at
// temperature 0 the output must be identical for every drafter, with drafts
// both accepted and rejected along the way; the cache must hold exactly the
// accepted tokens afterwards.

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "cria/core/error.h"
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

}  // namespace
}  // namespace cria::spec
