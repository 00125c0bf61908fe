// Speculative decoding on mixture-of-experts targets (llama.cpp's qwen3moe,
// deepseek2 and bailingmoe3 fixtures: routed experts, MLA, and bailingmoe3's
// Kimi delta attention layers whose recurrent state must roll back): at
// temperature 0 the ngram drafter and the draft-model drafter give exactly the
// tokens of plain decoding, with drafts made and some rejected, and the cache
// holds exactly the accepted tokens afterwards. The draft model is another
// MoE fixture (its drafts mostly refused: the rollback path) or the target
// itself (its drafts accepted: multi-token verify batches through the experts).
// The fixtures carry no tokenizer, so prompts are their token ids.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cria/model/model.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/spec/speculative.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

namespace fs = std::filesystem;

constexpr int kGenerated = 40;
// Another small MoE fixture with the same (128-token) vocabulary as every
// target: it drafts tokens the target mostly refuses.
constexpr const char* kOtherDraftFixture = "llama-moe";

// How the target is drafted for.
enum class Drafting { OtherModel, SameModel, NgramSimple };

const char* drafting_name(Drafting d) {
    switch (d) {
        case Drafting::OtherModel: return "draft_llama_moe";
        case Drafting::SameModel: return "draft_itself";
        case Drafting::NgramSimple: return "ngram_simple";
    }
    return "";
}

fs::path fixture(const std::string& name, const char* ext) { return test::arch_fixtures_dir() / (name + ext); }

runtime::ContextParams context_params() {
    runtime::ContextParams cp;
    cp.n_ctx = 0;  // the fixtures' training context (128)
    cp.n_threads = 2;
    cp.type_k = ElementType::F32;
    cp.type_v = ElementType::F32;
    return cp;
}

sampling::Chain greedy_chain(const vocab::Vocab& v, const runtime::Context& ctx) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &v;
    cc.n_ctx = static_cast<int32_t>(ctx.n_ctx());
    return sampling::build_chain(sp, cc);
}

// The fixture's own tokens, the first half twice over: the repetition gives
// the ngram drafter something to look up from the first step on.
std::vector<TokenId> prompt_of(const std::string& name) {
    std::ifstream in(fixture(name, ".json"));
    const auto tokens = nlohmann::json::parse(in).at("tokens").get<std::vector<TokenId>>();
    std::vector<TokenId> prompt(tokens.begin(), tokens.begin() + 20);
    prompt.insert(prompt.end(), tokens.begin(), tokens.begin() + 20);
    return prompt;
}

SpecParams forced(Drafting drafting, const std::string& target) {
    SpecParams p;
    p.types = {drafting == Drafting::NgramSimple ? SpecType::NgramSimple : SpecType::Draft};
    p.adaptive = false;  // draft at every step, so verification is exercised
    p.n_max = 6;
    p.ngram_simple = {2, 6, 1};
    if (drafting == Drafting::OtherModel) p.draft_model = fixture(kOtherDraftFixture, ".gguf").string();
    if (drafting == Drafting::SameModel) p.draft_model = fixture(target, ".gguf").string();
    return p;
}

class MoeIdentity : public ::testing::TestWithParam<std::tuple<std::string, Drafting>> {};

TEST_P(MoeIdentity, TemperatureZeroMatchesPlain) {
    if (test::arch_fixtures_dir().empty())
        GTEST_SKIP() << "llama.cpp's architecture fixtures are not here: set CRIA_ARCH_FIXTURES or place "
                        "../shared/testdata/arch-fixtures beside the checkout";
    const auto& [name, drafting] = GetParam();
    const auto model = model::Model::load(fixture(name, ".gguf").string());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    const auto prompt = prompt_of(name);

    runtime::Context plain_ctx(*model, context_params());
    auto plain_chain = greedy_chain(vocab, plain_ctx);
    const auto expected = runtime::generate(plain_ctx, vocab, plain_chain, prompt, kGenerated).tokens;
    ASSERT_EQ(expected.size(), static_cast<size_t>(kGenerated));

    runtime::Context ctx(*model, context_params());
    auto chain = greedy_chain(vocab, ctx);
    const SpecParams params = forced(drafting, name);
    Speculator s(params, make_drafters(params, ctx, vocab));
    const auto got = s.generate(ctx, vocab, chain, prompt, kGenerated).tokens;
    EXPECT_EQ(got, expected);
    const Metrics& m = s.metrics();
    EXPECT_GT(m.tokens_drafted(), 0) << m.format();
    if (drafting == Drafting::OtherModel) {
        // Another model's drafts: some are refused, so the rollback ran.
        EXPECT_LT(m.tokens_accepted(), m.tokens_drafted()) << m.format();
    }
    if (drafting == Drafting::SameModel) {
        // The target's own drafts: accepted, several tokens per verify batch.
        EXPECT_GT(m.tokens_accepted(), 0) << m.format();
    }
    // The cache holds the prompt and every emitted token but the last (not decoded yet).
    EXPECT_EQ(ctx.memory_seq_pos_max(0), static_cast<int32_t>(prompt.size() + got.size()) - 2);
    std::printf("[ spec     ] %s %s: %s\n", name.c_str(), drafting_name(drafting),
                m.format().c_str());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MoeIdentity,
                         ::testing::Combine(::testing::Values("qwen3moe-moe", "deepseek2-moe", "bailingmoe3-moe"),
                                            ::testing::Values(Drafting::OtherModel, Drafting::SameModel,
                                                              Drafting::NgramSimple)),
                         [](const auto& info) {
                             std::string s = std::get<0>(info.param) + "_" +
                                             drafting_name(std::get<1>(info.param));
                             for (char& c : s)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

}  // namespace
}  // namespace cria::spec
