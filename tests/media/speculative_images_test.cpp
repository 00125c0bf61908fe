// Speculative decoding with images in the prompt: with every drafter kind,
// greedy output equals plain decoding of the same prompt (images through
// media::eval_media_prompt, then runtime::continue_generation). The images
// are random embedding rows of the target's width (no projector needed: the
// text model reads embeddings either way); the prompt repeats its text on
// both sides of an image, so n-gram drafters find matches, and each kind
// must draft (a run that never drafted would prove nothing). The heads
// (EAGLE-3, DFlash, DSpark, MTP) come from ../shared/testdata/drafter-fixtures
// and are skipped, saying so, without it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "cria/media/eval_prompt.h"
#include "cria/media/media_prompt.h"
#include "cria/media/prompt_positions.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/chain.h"
#include "cria/spec/speculative.h"
#include "support/test_paths.h"

namespace {

using namespace cria;

std::filesystem::path drafter_fixtures() {
    if (const char* env = std::getenv("CRIA_DRAFTER_FIXTURES")) return env;
    const auto dir = test::source_dir().parent_path() / "shared" / "testdata" / "drafter-fixtures";
    return std::filesystem::exists(dir / "eagle3-austen-7m.gguf") ? dir : std::filesystem::path();
}

const model::Model& load(const std::string& path) {
    static std::map<std::string, std::unique_ptr<model::Model>> models;
    auto& m = models[path];
    if (!m) m = model::Model::load(path);
    return *m;
}

std::shared_ptr<const media::ImageChunk> random_image(int64_t n_tokens, int64_t n_embd, uint64_t hash) {
    auto c = std::make_shared<media::ImageChunk>();
    c->nx = n_tokens;
    c->ny = 1;
    c->n_tokens = n_tokens;
    c->n_embd = n_embd;
    c->hash = hash;
    std::mt19937 rng(static_cast<uint32_t>(hash));
    std::normal_distribution<float> d(0.0f, 0.02f);  // the scale of a token embedding
    c->embd.resize(static_cast<size_t>(n_tokens * n_embd));
    for (float& x : c->embd) x = d(rng);
    return c;
}

// Two images, the text around them repeated.
media::MediaPrompt image_prompt(const model::Model& m, const vocab::Vocab& vocab) {
    const int64_t n_embd = m.hparams().n_embd;
    const std::vector<std::shared_ptr<const media::ImageChunk>> images{random_image(5, n_embd, 0x1234567),
                                                                       random_image(3, n_embd, 0x89abcdef)};
    const std::string text =
        "Elizabeth looked at her sister and said <__media__> Elizabeth looked at her sister and said that "
        "<__media__> she would not go. Elizabeth looked at her sister and said";
    return media::tokenize_media_prompt(vocab, text, images, {}, media::kDefaultMediaMarker, true, false);
}

runtime::ContextParams context_params() {
    runtime::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    return cp;
}

sampling::Chain greedy(const vocab::Vocab& vocab) {
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    return sampling::build_chain(sp, cc);
}

constexpr int kPredict = 48;

std::vector<runtime::TokenId> plain(const model::Model& m, const media::MediaPrompt& prompt) {
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    runtime::Context ctx(m, context_params());
    auto chain = greedy(vocab);
    const int32_t n_past = media::eval_media_prompt(ctx, prompt, 0, 0, true);
    for (const auto& c : prompt.chunks)
        for (auto t : c.tokens) chain.accept_prompt(t);
    return runtime::continue_generation(ctx, vocab, chain, n_past, kPredict).tokens;
}

struct SpecRun {
    std::vector<runtime::TokenId> tokens;
    spec::Metrics metrics;
};

SpecRun speculative(const model::Model& m, const media::MediaPrompt& prompt, const spec::SpecParams& params) {
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    runtime::Context ctx(m, context_params());
    spec::Speculator speculator(params, spec::make_drafters(params, ctx, vocab));
    spec::DecodedPrompt decoded;
    decoded.positions = media::prompt_positions(prompt);
    decoded.decode = [&prompt](runtime::Context& c, size_t n, std::vector<float>* features) {
        media::eval_media_prompt_prefix(c, prompt, 0, n, features);
    };
    decoded.embedding_at = [&prompt](int32_t pos) { return media::image_embedding_at(prompt, pos); };
    auto chain = greedy(vocab);
    SpecRun run;
    run.tokens = speculator.generate(ctx, vocab, chain, decoded, kPredict).tokens;
    run.metrics = speculator.metrics();
    return run;
}

struct Case {
    const char* name;
    spec::SpecType type;
    const char* file;    // the drafter's file (in drafter-fixtures, or a test model); "" none
    bool head;           // a head from drafter-fixtures
};

class SpeculativeImages : public ::testing::TestWithParam<Case> {};

TEST_P(SpeculativeImages, GreedyOutputEqualsPlainDecodingOfTheSamePrompt) {
    const Case& c = GetParam();
    if (c.head && drafter_fixtures().empty()) GTEST_SKIP() << "no ../shared/testdata/drafter-fixtures beside the checkout";
    const bool mtp = c.type == spec::SpecType::Mtp;
    const std::string target_path = mtp ? (drafter_fixtures() / "mimo2-austen-1m-mtp.gguf").string()
                                        : test::model_path("austen-7m/austen-7m-f32.gguf").string();
    const model::Model& m = load(target_path);
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const media::MediaPrompt prompt = image_prompt(m, vocab);
    ASSERT_EQ(prompt.n_images(), 2u);

    spec::SpecParams p;
    if (c.type != spec::SpecType::Eagle3 && c.type != spec::SpecType::Dflash && c.type != spec::SpecType::Dspark)
        p.types = {c.type};
    p.adaptive = false;  // draft at every step
    p.n_max = p.draft.n_max = 6;
    p.draft.p_min = 0.0f;
    p.ngram_simple = {2, 8, 1};
    p.ngram_map_k = {2, 8, 1};
    p.ngram_map_k4v = {2, 4, 1};
    p.ngram_mod = {3, 1, 8};
    if (c.head && *c.file) p.draft_model = (drafter_fixtures() / c.file).string();
    else if (*c.file) p.draft_model = test::model_path(c.file).string();

    const auto expected = plain(m, prompt);
    ASSERT_EQ(expected.size(), static_cast<size_t>(kPredict));
    const SpecRun got = speculative(m, prompt, p);
    EXPECT_EQ(got.tokens, expected);
    EXPECT_GT(got.metrics.tokens_drafted(), 0) << got.metrics.format();
    EXPECT_GT(got.metrics.tokens_accepted(), 0) << got.metrics.format();
}

INSTANTIATE_TEST_SUITE_P(Drafters, SpeculativeImages,
                         ::testing::Values(Case{"ngram_simple", spec::SpecType::NgramSimple, "", false},
                                           Case{"ngram_map_k", spec::SpecType::NgramMapK, "", false},
                                           Case{"ngram_map_k4v", spec::SpecType::NgramMapK4v, "", false},
                                           Case{"ngram_mod", spec::SpecType::NgramMod, "", false},
                                           Case{"ngram_cache", spec::SpecType::NgramCache, "", false},
                                           Case{"draft_model", spec::SpecType::Draft, "austen-1m/austen-1m-f32.gguf", false},
                                           Case{"eagle3", spec::SpecType::Eagle3, "eagle3-austen-7m.gguf", true},
                                           Case{"dflash", spec::SpecType::Dflash, "dflash-austen-7m.gguf", true},
                                           Case{"dspark", spec::SpecType::Dspark, "dspark-austen-7m.gguf", true},
                                           Case{"mtp", spec::SpecType::Mtp, "", true}),
                         [](const auto& info) { return std::string(info.param.name); });

// The prompt position by position: image tokens are placeholders below 0
// (one per image hash), whose embedding rows are found by position.
TEST(PromptPositions, ImagePositionsArePlaceholdersWithTheirRows) {
    const model::Model& m = load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    const auto vocab = vocab::Vocab::from_gguf(m.file());
    const media::MediaPrompt prompt = image_prompt(m, vocab);
    const auto positions = media::prompt_positions(prompt);
    ASSERT_EQ(static_cast<int32_t>(positions.size()), prompt.n_positions());
    size_t pos = 0, n_image = 0;
    for (const auto& c : prompt.chunks) {
        if (!c.is_image()) {
            for (auto t : c.tokens) {
                EXPECT_EQ(positions[pos], t);
                EXPECT_EQ(media::image_embedding_at(prompt, static_cast<int32_t>(pos++)), nullptr);
            }
            continue;
        }
        ++n_image;
        for (int64_t i = 0; i < c.image->n_tokens; ++i, ++pos) {
            EXPECT_EQ(positions[pos], media::image_placeholder(c.image->hash));
            EXPECT_LT(positions[pos], 0);
            EXPECT_EQ(media::image_embedding_at(prompt, static_cast<int32_t>(pos)), c.image->embd.data() + i * c.image->n_embd);
        }
    }
    EXPECT_EQ(n_image, 2u);
    EXPECT_EQ(media::image_embedding_at(prompt, static_cast<int32_t>(pos)), nullptr);
    EXPECT_NE(media::image_placeholder(1), media::image_placeholder(2));
}

}  // namespace
