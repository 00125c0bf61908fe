#include "cria/model/reference_forward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace cria::model {
namespace {

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int32_t argmax(const std::vector<float>& row) {
    return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// The oracle itself must be right: greedy decoding with it reproduces the
// start of llama.cpp's greedy text for the bundled model. (The reference
// recomputes the whole sequence for every token, so only a prefix is checked;
// the fast path checks all 256 tokens.)
TEST(ReferenceForward, Stories260KGreedyMatchesLlamaCpp) {
    const auto path = test::model_path("stories260K/stories260K.gguf").string();
    auto file = gguf::File::open(path);
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(*file);
    const std::string expected = read_text(test::model_path("stories260K/greedy-256.txt"));

    std::vector<vocab::TokenId> tokens = vocab.tokenize("Once upon a time", /*add_special=*/true);
    ASSERT_EQ(tokens.front(), vocab.bos());
    const size_t n_prompt = tokens.size();
    for (int i = 0; i < 24; ++i) {
        const auto logits = reference_forward(*file, tokens);
        tokens.push_back(argmax(logits.back()));
    }
    // llama.cpp prints the pieces one by one, keeping SentencePiece's leading space.
    std::string text;
    for (size_t i = 1; i < tokens.size(); ++i) text += vocab.token_to_piece(tokens[i], /*special=*/false);
    ASSERT_GT(text.size(), 40u);
    EXPECT_EQ(expected.substr(0, text.size()), text) << "generated " << tokens.size() - n_prompt << " tokens";
}

TEST(ReferenceForward, LogitsArePerPositionAndCausal) {
    auto file = gguf::File::open(test::model_path("stories260K/stories260K.gguf").string());
    const std::vector<int32_t> tokens = {1, 400, 300, 200};
    const auto full = reference_forward(*file, tokens);
    ASSERT_EQ(full.size(), tokens.size());
    ASSERT_EQ(full[0].size(), 512u);
    // A prefix of the sequence gives the same logits at its positions: no
    // position may see a later one.
    const auto prefix = reference_forward(*file, std::span(tokens).first(2));
    for (size_t p = 0; p < 2; ++p)
        for (size_t v = 0; v < 512; ++v) EXPECT_FLOAT_EQ(full[p][v], prefix[p][v]);
    // Different histories give different logits at the last position.
    EXPECT_NE(full[3], reference_forward(*file, std::vector<int32_t>{1, 401, 300, 200})[3]);
}

TEST(ReferenceForward, RejectsTokenOutsideVocabulary) {
    auto file = gguf::File::open(test::model_path("stories260K/stories260K.gguf").string());
    EXPECT_THROW(reference_forward(*file, std::vector<int32_t>{1, 512}), Error);
    EXPECT_THROW(reference_forward(*file, std::vector<int32_t>{-1}), Error);
}

}  // namespace
}  // namespace cria::model
