// Every drafter on a hybrid target (Qwen3.5: gated delta-net layers beside
// attention; its random weights chosen so that every drafter drafts and has
// drafts rejected within the run): the recurrent states cannot drop
// rejected positions, so verification rolls them back through the memory's
// checkpoints, and greedy output must still be plain decoding's, token for
// token. The draft model is another random model with the same vocabulary,
// so most of its drafts are rejected and the rollback path runs often.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>

#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/spec/speculative.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

std::string synthetic_path(const std::string& arch, uint64_t seed) {
    static std::map<std::string, std::string> written;
    const std::string key = arch + "-" + std::to_string(seed);
    auto it = written.find(key);
    if (it != written.end()) return it->second;
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny(arch);
    spec.stddev = 0.08f;
    spec.seed = seed;
    const auto path = (test::temp_dir() / ("hybrid-drafters-" + key + ".gguf")).string();
    model::write_synthetic_model(spec, path);
    return written.emplace(key, path).first->second;
}

struct Target {
    std::unique_ptr<model::Model> model;
    std::unique_ptr<vocab::Vocab> vocab;
};

const Target& target(const std::string& arch) {
    static std::map<std::string, Target> cache;
    auto& t = cache[arch];
    if (!t.model) {
        t.model = model::Model::load(synthetic_path(arch, 3));
        t.vocab = std::make_unique<vocab::Vocab>(vocab::Vocab::from_gguf(t.model->file()));
    }
    return t;
}

runtime::ContextParams context_params() {
    runtime::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    return cp;
}

sampling::Chain greedy_chain(const vocab::Vocab& v) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &v;
    return sampling::build_chain(sp, cc);
}

// A prompt that repeats itself, so the n-gram drafters find matches at once.
std::vector<TokenId> prompt() {
    std::vector<TokenId> p{1};
    for (int r = 0; r < 3; ++r)
        for (TokenId t = 20; t < 32; ++t) p.push_back(t);
    return p;
}

class HybridIdentity : public ::testing::TestWithParam<std::tuple<std::string, SpecType>> {};

TEST_P(HybridIdentity, GreedyOutputIsThePlainOne) {
    const auto& [arch, type] = GetParam();
    const Target& t = target(arch);
    const int n = 160;
    std::vector<TokenId> expected;
    {
        runtime::Context ctx(*t.model, context_params());
        auto chain = greedy_chain(*t.vocab);
        expected = runtime::generate(ctx, *t.vocab, chain, prompt(), n).tokens;
    }
    SpecParams p;
    p.types = {type};
    p.adaptive = false;  // draft at every step, so verification is exercised
    p.n_max = 6;
    p.ngram_simple = {2, 6, 1};
    p.ngram_map_k = {2, 6, 1};
    p.ngram_map_k4v = {2, 4, 1};
    p.ngram_mod = {3, 1, 6};
    if (type == SpecType::Draft) p.draft_model = synthetic_path(arch, 4);  // same vocabulary, other weights
    runtime::Context ctx(*t.model, context_params());
    auto chain = greedy_chain(*t.vocab);
    Speculator s(p, make_drafters(p, ctx, *t.vocab));
    const auto got = s.generate(ctx, *t.vocab, chain, prompt(), n).tokens;
    EXPECT_EQ(got, expected) << s.metrics().format();
    // Drafts were made and some rejected: the rollback ran.
    EXPECT_GT(s.metrics().tokens_drafted(), 0) << s.metrics().format();
    EXPECT_LT(s.metrics().tokens_accepted(), s.metrics().tokens_drafted()) << s.metrics().format();
    // The memory holds the prompt and every emitted token but the last.
    EXPECT_EQ(ctx.memory_seq_pos_max(0), static_cast<int32_t>(prompt().size() + got.size()) - 2);
}

INSTANTIATE_TEST_SUITE_P(Drafters, HybridIdentity,
                         ::testing::Combine(::testing::Values(std::string("qwen35")),
                                            ::testing::Values(SpecType::Draft, SpecType::NgramSimple,
                                                              SpecType::NgramMapK, SpecType::NgramMapK4v,
                                                              SpecType::NgramMod, SpecType::NgramCache)),
                         [](const auto& info) {
                             std::string s = std::get<0>(info.param) + "_" +
                                             std::string(spec_type_name(std::get<1>(info.param)));
                             std::erase(s, '-');
                             return s;
                         });

}  // namespace
}  // namespace cria::spec
