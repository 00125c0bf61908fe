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

#include "cria/model/synthetic_model.h"

namespace cria::model {
namespace {

// On a one-layer gemma2 (its only layer slides, window 8) the last of 12
// positions must not see tokens more than 7 positions back.
TEST(ReferenceForward, SlidingWindowHidesOldTokens) {
    SyntheticModelSpec spec = SyntheticModelSpec::tiny("gemma2");
    spec.n_layer = 1;
    spec.stddev = 0.2f;  // large enough weights that every input shows in the logits
    const std::string path = (test::temp_dir() / "swa.gguf").string();
    write_synthetic_model(spec, path);
    auto file = gguf::File::open(path);
    std::vector<int32_t> tokens = {1, 100, 200, 7, 300, 301, 5, 9, 17, 250, 260, 3};
    const auto base = reference_forward(*file, tokens).back();
    auto changed = tokens;
    changed[3] = 8;  // position 3: outside the window of position 11
    EXPECT_EQ(base, reference_forward(*file, changed).back());
    changed = tokens;
    changed[4] = 8;  // position 4: the oldest one inside the window
    EXPECT_NE(base, reference_forward(*file, changed).back());
}

}  // namespace
}  // namespace cria::model
