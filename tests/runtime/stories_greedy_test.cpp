// End to end on the bundled stories260K model: greedy decoding of "Once upon
// a time" must reproduce llama.cpp's 256 tokens exactly.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cria/model/model.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string greedy(const std::string& model_path, const std::string& prompt, int n, ContextParams cp) {
    auto model = model::Model::load(model_path);
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    Context ctx(*model, cp);
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    cc.n_ctx = static_cast<int32_t>(ctx.n_ctx());
    auto chain = sampling::build_chain(sp, cc);
    const auto tokens = vocab.tokenize(prompt, true, false);
    const auto result = generate(ctx, vocab, chain, tokens, n);
    std::string text;
    for (TokenId t : result.tokens) text += vocab.token_to_piece(t, false);
    return text;
}

// The reference file ends with the blank line llama.cpp prints after the
// generation; the 256 tokens themselves end before it.
std::string expected_text() {
    std::string expected = read_file(test::model_path("stories260K/greedy-256.txt").string());
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    return expected;
}

class StoriesGreedy : public ::testing::TestWithParam<ElementType> {};

TEST_P(StoriesGreedy, Matches256TokensOfLlamaCpp) {
    const std::string expected = expected_text();
    ContextParams cp;
    cp.n_ctx = 512;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = GetParam();
    const std::string text = greedy(test::model_path("stories260K/stories260K.gguf").string(), "Once upon a time", 256, cp);
    // greedy-256.txt is what llama.cpp prints: the prompt (with SPM's
    // leading space) followed by the 256 generated tokens.
    EXPECT_EQ(" Once upon a time" + text, expected);
}

// F16 is the default cache type (as llama.cpp's); F32 must agree too.
INSTANTIATE_TEST_SUITE_P(CacheTypes, StoriesGreedy, ::testing::Values(ElementType::F16, ElementType::F32),
                         [](const auto& info) { return std::string(element_type_name(info.param)); });

}  // namespace
}  // namespace cria::runtime
