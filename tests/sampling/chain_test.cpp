// The chain: order, llama.cpp defaults, sequence strings, grammar slot.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/core/error.h"
#include "cria/sampling/params.h"
#include "cria/vocab/vocab.h"
#include "sampling_test_util.h"
#include "support/test_paths.h"

namespace cria::sampling {
namespace {

using test::kNegInf;

TEST(Params, LlamaCppDefaults) {
    const SamplingParams p;
    EXPECT_EQ(p.seed, 0xFFFFFFFFu);
    EXPECT_EQ(p.top_k, 40);
    EXPECT_FLOAT_EQ(p.top_p, 0.95f);
    EXPECT_FLOAT_EQ(p.min_p, 0.05f);
    EXPECT_FLOAT_EQ(p.typ_p, 1.0f);
    EXPECT_FLOAT_EQ(p.temp, 0.8f);
    EXPECT_FLOAT_EQ(p.xtc_probability, 0.0f);
    EXPECT_FLOAT_EQ(p.xtc_threshold, 0.1f);
    EXPECT_FLOAT_EQ(p.dynatemp_range, 0.0f);
    EXPECT_FLOAT_EQ(p.dynatemp_exponent, 1.0f);
    EXPECT_EQ(p.penalty_last_n, 64);
    EXPECT_FLOAT_EQ(p.penalty_repeat, 1.0f);
    EXPECT_FLOAT_EQ(p.penalty_freq, 0.0f);
    EXPECT_FLOAT_EQ(p.penalty_present, 0.0f);
    EXPECT_FLOAT_EQ(p.dry_multiplier, 0.0f);
    EXPECT_FLOAT_EQ(p.dry_base, 1.75f);
    EXPECT_EQ(p.dry_allowed_length, 2);
    EXPECT_EQ(p.dry_penalty_last_n, -1);
    EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
    EXPECT_EQ(p.mirostat, 0);
    EXPECT_FLOAT_EQ(p.mirostat_tau, 5.0f);
    EXPECT_FLOAT_EQ(p.mirostat_eta, 0.1f);
    EXPECT_FLOAT_EQ(p.top_n_sigma, -1.0f);
    EXPECT_EQ(p.min_keep, 0);
    EXPECT_EQ(samplers_to_chars(p.samplers), "edskypmxt");
}

TEST(SequenceStrings, LettersAndNames) {
    const auto order = SamplingParams::default_sampler_order();
    EXPECT_EQ(samplers_from_chars("edskypmxt"), order);
    EXPECT_EQ(samplers_to_names(order), "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
    EXPECT_EQ(samplers_from_names(samplers_to_names(order)), order);
    EXPECT_EQ(samplers_from_names("top-k;nucleus;temp;typical;min-p"),
              (std::vector<SamplerType>{SamplerType::TopK, SamplerType::TopP, SamplerType::Temperature,
                                        SamplerType::TypicalP, SamplerType::MinP}));
    EXPECT_THROW(samplers_from_names("top-k", false), Error);
    EXPECT_THROW(samplers_from_names("top_k;bogus"), Error);
    EXPECT_THROW(samplers_from_chars("kq"), Error);
    EXPECT_EQ(samplers_from_chars("tk"), (std::vector<SamplerType>{SamplerType::Temperature, SamplerType::TopK}));
}

ChainContext context_without_vocab(int32_t n_vocab) {
    ChainContext context;
    context.n_vocab = n_vocab;
    return context;
}

TEST(BuildChain, DefaultOrder) {
    SamplingParams p;
    p.dry_sequence_breakers.clear();  // no vocab here; DRY is disabled anyway
    const Chain chain = build_chain(p, context_without_vocab(100));
    EXPECT_EQ(chain.describe(),
              "logits -> penalties -> dry -> top-n-sigma -> top-k -> typical -> top-p -> min-p -> xtc -> temp-ext -> dist");
}

TEST(BuildChain, CustomOrderLogitBiasAndMirostat) {
    SamplingParams p;
    p.samplers = samplers_from_chars("kt");
    p.logit_bias = {{3, 1.0f}};
    EXPECT_EQ(build_chain(p, context_without_vocab(10)).describe(), "logits -> logit-bias -> top-k -> temp-ext -> dist");
    p.mirostat = 1;
    EXPECT_EQ(build_chain(p, context_without_vocab(10)).describe(), "logits -> logit-bias -> temp -> mirostat");
    p.mirostat = 2;
    EXPECT_EQ(build_chain(p, context_without_vocab(10)).describe(), "logits -> logit-bias -> temp -> mirostat-v2");
    p.mirostat = 3;
    EXPECT_THROW(build_chain(p, context_without_vocab(10)), Error);
}

TEST(BuildChain, InvalidParameters) {
    SamplingParams p;
    p.dry_sequence_breakers.clear();
    p.penalty_last_n = -2;
    EXPECT_THROW(build_chain(p, context_without_vocab(10)), Error);
    p.penalty_last_n = 64;
    p.dry_penalty_last_n = -5;
    EXPECT_THROW(build_chain(p, context_without_vocab(10)), Error);
    SamplingParams needs_vocab;  // DRY enabled with string breakers but no vocab
    needs_vocab.dry_multiplier = 0.8f;
    EXPECT_THROW(build_chain(needs_vocab, context_without_vocab(10)), Error);
    SamplingParams ignore_eos;
    ignore_eos.dry_sequence_breakers.clear();
    ignore_eos.ignore_eos = true;
    EXPECT_THROW(build_chain(ignore_eos, context_without_vocab(10)), Error);
}

TEST(BuildChain, PenaltyLastNMinusOneMeansContextSize) {
    // n_ctx 2: after accepting 0, 1, 2 only 1 and 2 are penalised.
    SamplingParams p;
    p.dry_sequence_breakers.clear();
    p.samplers = {SamplerType::Penalties};
    p.penalty_last_n = -1;
    p.penalty_repeat = 2.0f;
    ChainContext context = context_without_vocab(4);
    context.n_ctx = 2;
    Chain chain = build_chain(p, context);
    for (TokenId t : {0, 1, 2}) {
        chain.accept(t);
    }
    Candidates c = test::from_logits({2, 2, 2, 2});
    chain.at(0).apply(c);
    EXPECT_EQ(test::logits_of(c), (std::vector<float>{2, 1, 1, 2}));
}

TEST(BuildChain, DefaultChainOnAHandMadeDistribution) {
    // p = 0.5, 0.3, 0.16, 0.03, 0.01 (+ 45 tokens at 1e-9 so top-k 40 cuts)
    // top-k 40 -> top-p 0.95: running 0.5, 0.8, 0.96 -> three survive
    // min-p 0.05: bar 0.025, all three pass
    // temp 0.8: p^1.25 = 0.420448, 0.221997, 0.101192 -> / 0.743637 =
    //           0.565394, 0.298529, 0.136077
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.16f), std::log(0.03f), std::log(0.01f)};
    logits.resize(50, std::log(1e-9f));
    SamplingParams p;
    p.seed = 11;
    p.dry_sequence_breakers.clear();
    Chain chain = build_chain(p, context_without_vocab(50));
    std::vector<int> counts(3, 0);
    const int n = 6000;
    for (int i = 0; i < n; ++i) {
        const TokenId t = chain.sample(logits);
        ASSERT_LT(t, 3);
        ++counts[static_cast<size_t>(t)];
        const Candidates& c = chain.candidates();
        if (i == 0) {
            ASSERT_EQ(c.size(), 3u);
            EXPECT_NEAR(c[0].p, 0.565394f, 1e-4);
            EXPECT_NEAR(c[1].p, 0.298529f, 1e-4);
            EXPECT_NEAR(c[2].p, 0.136077f, 1e-4);
        }
    }
    // chi-square, 2 degrees of freedom: P(> 13.82) = 0.001
    const double probs[3] = {0.565394, 0.298529, 0.136077};
    double chi2 = 0;
    for (int i = 0; i < 3; ++i) {
        const double e = probs[i] * n;
        chi2 += (counts[static_cast<size_t>(i)] - e) * (counts[static_cast<size_t>(i)] - e) / e;
    }
    EXPECT_LT(chi2, 13.82);
}

TEST(BuildChain, TemperatureZeroIsGreedy) {
    SamplingParams p;
    p.temp = 0.0f;
    p.seed = 5;
    p.dry_sequence_breakers.clear();
    Chain chain = build_chain(p, context_without_vocab(6));
    const std::vector<float> logits = {0.1f, 2.0f, 1.99f, -3.0f, 2.0f, 0.0f};
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(chain.sample(logits), 1);
    }
}

TEST(BuildChain, WithAVocabulary) {
    const vocab::Vocab vocab = vocab::Vocab::load(cria::test::model_path("stories260K/stories260K.gguf").string());
    SamplingParams p;
    p.seed = 3;
    p.dry_multiplier = 0.8f;  // breakers get tokenized against the vocab
    p.ignore_eos = true;
    ChainContext context;
    context.vocab = &vocab;
    Chain chain = build_chain(p, context);
    EXPECT_EQ(chain.describe().substr(0, 29), "logits -> logit-bias -> penal");
    // EOS made the most likely token is still never sampled
    std::vector<float> logits(vocab.size(), 0.0f);
    logits[static_cast<size_t>(vocab.eos())] = 50.0f;
    for (int i = 0; i < 20; ++i) {
        const TokenId t = chain.sample(logits);
        EXPECT_FALSE(vocab.is_eog(t));
        chain.accept(t);
    }
}

// A stand-in grammar: only odd tokens are allowed. Records what it saw.
class OddOnly final : public Sampler {
public:
    std::string_view name() const override { return "odd-only"; }
    void apply(Candidates& c) override {
        ++applies;
        largest_seen = std::max(largest_seen, c.size());
        for (Candidate& x : c) {
            if (x.id % 2 == 0) {
                x.logit = kNegInf;
            }
        }
    }
    void accept(TokenId t) override { accepted.push_back(t); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<OddOnly>(*this); }
    int applies = 0;
    size_t largest_seen = 0;
    std::vector<TokenId> accepted;
};

TEST(ChainGrammar, RejectedTokenIsResampledWithTheGrammarFirst) {
    Chain chain;
    chain.add(make_greedy());
    auto grammar = std::make_unique<OddOnly>();
    OddOnly* g = grammar.get();
    chain.set_grammar(std::move(grammar));
    // greedy wants 0 (even): the probe rejects it, the second pass gives 3.
    EXPECT_EQ(chain.sample(std::vector<float>{5, 1, 2, 4, 3}), 3);
    EXPECT_EQ(g->applies, 2);
    // 1 is the best and allowed: only the single-token probe is checked.
    g->applies = 0;
    g->largest_seen = 0;
    EXPECT_EQ(chain.sample(std::vector<float>{0, 9, 2}), 1);
    EXPECT_EQ(g->applies, 1);
    EXPECT_EQ(g->largest_seen, 1u);
    // grammar first: one full pass.
    g->applies = 0;
    EXPECT_EQ(chain.sample(std::vector<float>{5, 1, 2, 4, 3}, true), 3);
    EXPECT_EQ(g->applies, 1);
    chain.accept(3);
    EXPECT_EQ(g->accepted, (std::vector<TokenId>{3}));
}

TEST(Chain, AppliesInOrderAndRejectsMisuse) {
    // top-k 2 then min-p 0.9 differs from min-p 0.9 then top-k 2 when the
    // order matters: here both keep just the best, but temp before top-k at 0
    // vs after shows the order is honoured through describe().
    Chain chain;
    chain.add(make_top_k(2));
    chain.add(make_temperature(0.5f));
    Candidates c = test::from_logits({1, 3, 2});
    chain.apply(c);
    EXPECT_EQ(test::logits_of(c), (std::vector<float>{6, 4}));
    EXPECT_EQ(chain.describe(), "logits -> top-k -> temp");
    EXPECT_THROW(chain.add(nullptr), Error);
    // a chain without a selecting sampler cannot sample
    EXPECT_THROW(chain.sample(std::vector<float>{1, 2}), Error);
    EXPECT_THROW(chain.sample(std::vector<float>{}), Error);
}

TEST(Chain, CloneCarriesState) {
    SamplingParams p;
    p.seed = 9;
    p.dry_sequence_breakers.clear();
    p.penalty_repeat = 1.5f;
    Chain a = build_chain(p, context_without_vocab(8));
    const std::vector<float> logits = {1, 1.2f, 0.8f, 1.1f, 0.9f, 1.05f, 0.7f, 1.0f};
    for (int i = 0; i < 10; ++i) {
        a.accept(a.sample(logits));
    }
    Chain b = a.copy();
    for (int i = 0; i < 30; ++i) {
        const TokenId ta = a.sample(logits);
        const TokenId tb = b.sample(logits);
        ASSERT_EQ(ta, tb);
        a.accept(ta);
        b.accept(tb);
    }
}

}  // namespace
}  // namespace cria::sampling
