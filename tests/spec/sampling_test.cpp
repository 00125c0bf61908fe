// Speculation at temperature > 0 keeps the target's distribution.
//
// With a drafter that reports probabilities the verifier uses rejection
// sampling: the next-token distribution after a verify step is compared, by a
// chi-square test over many seeded runs, with the exact distribution the
// target's chain gives. Without probabilities (sample-and-compare) the output
// is even identical to plain sampling with the same seed.

#include <gtest/gtest.h>

#include <map>

#include "cria/model/model.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/spec/speculative.h"
#include "spec/chi_square.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

// Proposes one token drawn from a fixed distribution q, and reports q.
class FixedDistributionDrafter final : public Drafter {
public:
    FixedDistributionDrafter(std::vector<sampling::Candidate> q, uint32_t seed) : q_(std::move(q)), rng_(seed) {}
    std::string_view name() const override { return "fixed"; }
    void begin(const BeginInput&) override {}
    void draft(const DraftInput&, int n_max, Draft& out) override {
        if (n_max < 1) return;
        double u = rng_.uniform_double();
        TokenId t = q_.back().id;
        for (const auto& c : q_) {
            u -= c.p;
            if (u < 0) {
                t = c.id;
                break;
            }
        }
        out.tokens.push_back(t);
        out.probs.push_back(q_);
    }
    int n_max() const override { return 1; }

private:
    std::vector<sampling::Candidate> q_;
    sampling::Rng rng_;
};

struct Fixture {
    std::unique_ptr<model::Model> model = model::Model::load(test::model_path("stories260K/stories260K.gguf").string());
    vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    runtime::ContextParams cp() const {
        runtime::ContextParams c;
        c.n_ctx = 256;
        c.n_threads = 1;
        return c;
    }
    sampling::Chain chain(float temp, uint32_t seed) const {
        sampling::SamplingParams sp;
        sp.temp = temp;
        sp.seed = seed;
        sampling::ChainContext cc;
        cc.vocab = &vocab;
        return sampling::build_chain(sp, cc);
    }
};

// The exact distribution of the second generated token: sum over the first.
std::map<int, double> second_token_distribution(const Fixture& f, const std::vector<TokenId>& prompt) {
    runtime::Context ctx(*f.model, f.cp());
    auto chain = f.chain(1.0f, 1);
    EXPECT_EQ(ctx.decode(runtime::Batch::from_tokens(prompt, 0)), 0);
    chain.sample(ctx.logits(-1));
    const auto first = std::vector<sampling::Candidate>(chain.candidates().begin(), chain.candidates().end());
    std::map<int, double> out;
    const auto pos = static_cast<int32_t>(prompt.size());
    for (const auto& c1 : first) {
        ctx.memory_seq_rm(0, pos, -1);
        EXPECT_EQ(ctx.decode(runtime::Batch::from_tokens({c1.id}, pos)), 0);
        chain.sample(ctx.logits(-1));
        for (const auto& c2 : chain.candidates()) out[c2.id] += static_cast<double>(c1.p) * c2.p;
    }
    return out;
}

TEST(SpeculativeSampling, RejectionSamplingKeepsTheTargetDistribution) {
    Fixture f;
    const auto prompt = f.vocab.tokenize("Once upon a time", true, true);
    const auto expected = second_token_distribution(f, prompt);

    // Two drafts: uniform over the vocabulary (mostly rejected: the residual
    // decides) and one that bets 90% on the target's favourite.
    int favourite = expected.begin()->first;
    for (const auto& [t, p] : expected)
        if (p > expected.at(favourite)) favourite = t;
    std::vector<sampling::Candidate> uniform, peaked;
    const int n_vocab = static_cast<int>(f.vocab.size());
    for (int t = 0; t < n_vocab; ++t) {
        uniform.push_back({t, 0.0f, 1.0f / static_cast<float>(n_vocab)});
        peaked.push_back({t, 0.0f, t == favourite ? 0.9f : 0.1f / static_cast<float>(n_vocab - 1)});
    }
    uint32_t seed = 100;
    for (const auto& q : {uniform, peaked}) {
        runtime::Context ctx(*f.model, f.cp());
        auto chain = f.chain(1.0f, seed);
        SpecParams params;
        params.adaptive = false;
        params.n_max = 1;
        std::vector<std::unique_ptr<Drafter>> drafters;
        drafters.push_back(std::make_unique<FixedDistributionDrafter>(q, seed + 2));
        Speculator s(params, std::move(drafters));
        sampling::SamplingParams sp;
        sp.temp = 1.0f;
        sp.seed = seed + 1;  // the verifier's uniforms
        s.set_sampling(sp);
        seed += 10;
        const long n = 2000;
        std::map<int, long> counts;
        long accepted = 0;
        for (long i = 0; i < n; ++i) {
            const auto r = s.generate(ctx, f.vocab, chain, prompt, 3);
            ASSERT_GE(r.tokens.size(), 2u);
            ++counts[r.tokens[1]];
            ASSERT_EQ(s.metrics().n_verify_steps, 1);
            accepted += s.metrics().tokens_accepted();
        }
        const auto chi = testing::chi_square(expected, counts, n);
        EXPECT_TRUE(chi.passes()) << "chi2 " << chi.statistic << " >= " << chi.critical << " (dof " << chi.dof
                                  << "), accepted " << accepted << " of " << n;
        EXPECT_GT(accepted, 0);
        EXPECT_LT(accepted, n);
    }
}

TEST(SpeculativeSampling, SampleAndCompareEqualsPlainSamplingWithTheSameSeed) {
    Fixture f;
    const auto prompt = f.vocab.tokenize("Once upon a time", true, true);
    runtime::Context ctx(*f.model, f.cp());
    auto chain = f.chain(0.8f, 42);
    const auto expected = runtime::generate(ctx, f.vocab, chain, prompt, 120).tokens;

    auto chain2 = f.chain(0.8f, 42);
    SpecParams params;
    params.types = {SpecType::NgramSimple};
    params.ngram_simple = {2, 8, 1};
    params.adaptive = false;
    Speculator s(params, make_drafters(params, ctx, f.vocab));
    sampling::SamplingParams sp;
    sp.temp = 0.8f;
    sp.seed = 42;
    s.set_sampling(sp);  // ngram drafts have no probabilities: sample-and-compare
    EXPECT_EQ(s.generate(ctx, f.vocab, chain2, prompt, 120).tokens, expected);
    EXPECT_GT(s.metrics().tokens_drafted(), 0);
}

}  // namespace
}  // namespace cria::spec
