// The austen models and stories260K against llama.cpp's figures
// (tests/data/reference-figures.md): greedy continuations compared in full
// and perplexity on austen-7m/valid.txt. The logits themselves are checked
// against llama.cpp's in arch_fixtures_test.cpp (austen-7m-f32.logits.json).

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/perplexity.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Greedy continuation against llama.cpp's printed text, every token of it.
void expect_greedy(const std::string& model_file, const std::string& expected, int n_predict) {
    auto model = model::Model::load(test::model_path(model_file).string());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    Context ctx(*model, cp);
    const std::string prompt = "It is a truth universally acknowledged";
    const auto prompt_tokens = vocab.tokenize(prompt, true, false);
    ASSERT_EQ(ctx.decode(Batch::from_tokens(prompt_tokens, 0)), 0);
    int32_t pos = static_cast<int32_t>(prompt_tokens.size());
    std::string text = prompt;
    for (int i = 0; i < n_predict; ++i) {
        const auto logits = ctx.logits(-1);
        const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        text += vocab.token_to_piece(top, false);
        Batch b;
        b.add(top, pos++, {0}, true);
        ASSERT_EQ(ctx.decode(b), 0);
    }
    EXPECT_EQ(text, expected);
}

const char* kAusten7m =
    "It is a truth universally acknowledged, and a\ncurfance of the world, and the same time, and the same time of\n"
    "the world, and the same time, and the same time, and the\nport of the same, and the same, and the same, and the\n"
    "port of the same, and the same, and the same, and the\nport of the same, and the same, and the same, and the\n"
    "port of the same, and the same, and the same, and the\nport of the same, and the same, and the same, and the\n"
    "port of the";

const char* kAusten1m =
    "It is a truth universally acknowledged, and\nthe world is not to be a good deal of the world, and the other\n"
    "country is not to be a very good deal of the world.  I am sure I\nhave been a very good deal of the world, and I "
    "am sure I am sure I am\nsure I am sure I am sure I am sure I am sure I am sure I am sure I\nhave been a very good "
    "deal of the world.  I am sure I am sure I am\nsure I am sure I am sure I am sure I am sure I am sure I am sure I\n"
    "have been a very good";

TEST(Austen, Greedy7mF32) { expect_greedy("austen-7m/austen-7m-f32.gguf", kAusten7m, 128); }
TEST(Austen, Greedy7mF16) { expect_greedy("austen-7m/austen-7m-f16.gguf", kAusten7m, 128); }
TEST(Austen, Greedy1mF32) { expect_greedy("austen-1m/austen-1m-f32.gguf", kAusten1m, 128); }

double ppl(const std::string& model_file, uint32_t n_ctx) {
    auto model = model::Model::load(test::model_path(model_file).string());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    PerplexityParams p;
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    return perplexity(*model, vocab, read_file(test::model_path("austen-7m/valid.txt").string()), p).ppl;
}

// llama-perplexity -f austen-7m/valid.txt, within 0.5%.
TEST(Austen, Perplexity1mF32) { EXPECT_NEAR(ppl("austen-1m/austen-1m-f32.gguf", 512), 89.3717, 89.3717 * 0.005); }
TEST(Austen, PerplexityStories260KCtx256) {
    EXPECT_NEAR(ppl("stories260K/stories260K.gguf", 256), 166.2662, 166.2662 * 0.005);
}

TEST(Austen, PerplexityNeedsTwoChunks) {
    auto model = model::Model::load(test::model_path("stories260K/stories260K.gguf").string());
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    EXPECT_THROW(perplexity(*model, vocab, "Once upon a time", {}), Error);
}

}  // namespace
}  // namespace cria::runtime
