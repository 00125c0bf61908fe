// cria embedding's stdout against llama-embedding's (examples/embedding/
// embedding.cpp, build 10470), byte for byte, on rows with exact binary
// values: the text layout for pooled, per-token and rank outputs, json,
// json+, array and raw; the cosine similarity and the CLI's rank tokens.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/model/synthetic_model.h"
#include "cria/runtime/embedding.h"
#include "cria/runtime/embedding_printout.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

EmbeddingPrintout two_prompts() {
    EmbeddingPrintout p;
    p.prompts = {"the cat sat", "hi"};
    p.rows = {{1.0f, 0.0f, 0.0f, 0.0f}, {0.6f, 0.8f, 0.0f, 0.0f}};
    return p;
}

TEST(EmbeddingPrintout, TextLayoutWithTheCosineMatrix) {
    EXPECT_EQ(format_embedding_printout(two_prompts(), ""),
              "\n"
              "embedding 0:  1.000000  0.000000  0.000000  0.000000 \n"
              "embedding 1:  0.600000  0.800000  0.000000  0.000000 \n"
              "\n"
              "cosine similarity matrix:\n"
              "\n"
              "the ca     hi \n"
              "  1.00   0.60 the cat sa\n"
              "  0.60   1.00 hi\n"
              "\n");
}

TEST(EmbeddingPrintout, OnePromptPrintsItAllSeveralTheFirst16) {
    EmbeddingPrintout one;
    one.prompts = {"x"};
    one.rows = {std::vector<float>(20, 0.5f)};
    one.normalize = 0;  // integers
    std::string want = "\nembedding 0: ";
    for (int i = 0; i < 20; ++i) want += "     0 ";  // "%6.0f " of 0.5 rounds to even
    EXPECT_EQ(format_embedding_printout(one, ""), want + "\n\n");

    EmbeddingPrintout two = two_prompts();
    two.rows = {std::vector<float>(20, 0.25f), std::vector<float>(20, 0.25f)};
    const std::string text = format_embedding_printout(two, "");
    const std::string first_line = text.substr(1, text.find('\n', 1) - 1);
    EXPECT_EQ(std::count(first_line.begin(), first_line.end(), '.'), 16) << first_line;
}

TEST(EmbeddingPrintout, PerTokenRowsShowTheFirstAndLastThree) {
    EmbeddingPrintout p;
    p.pooling = Pooling::None;
    p.prompts = {"one prompt"};
    p.rows = {{1, 2, 3, 4, 5}, {-1, 0, 1}};
    p.normalize = -1;
    EXPECT_EQ(format_embedding_printout(p, ""),
              "\n"
              "embedding 0:  1.000000  2.000000  3.000000  ...  3.000000  4.000000  5.000000 \n"
              "embedding 1: -1.000000  0.000000  1.000000  ... -1.000000  0.000000  1.000000 \n"
              "\n");
    p.rows = {{1, 2}};  // llama-embedding reads before the row here
    EXPECT_THROW(format_embedding_printout(p, ""), Error);
}

TEST(EmbeddingPrintout, RankScoresWithAndWithoutLabels) {
    EmbeddingPrintout p;
    p.pooling = Pooling::Rank;
    p.prompts = {"q\td", "q\te"};
    p.rows = {{0.5f}, {-12.25f}};
    EXPECT_EQ(format_embedding_printout(p, ""), "\nrerank score 0:    0.500\nrerank score 1:  -12.250\n\n");
    p.rows = {{0.25f, -1.5f}, {2.0f, 0.0f}};
    p.cls_labels = {"yes", ""};
    EXPECT_EQ(format_embedding_printout(p, ""),
              "\n"
              "rerank score 0:    0.250 [yes]\n"
              "rerank score 0:   -1.500 [1]\n"
              "rerank score 1:    2.000 [yes]\n"
              "rerank score 1:    0.000 [1]\n"
              "\n");
}

EmbeddingPrintout small_pair() {
    EmbeddingPrintout p;
    p.prompts = {"a", "b"};
    p.rows = {{0.5f, -0.25f}, {1.0f, 0.0f}};
    return p;
}

const char* kJsonList =
    "{\n"
    "  \"object\": \"list\",\n"
    "  \"data\": [\n"
    "    {\n"
    "      \"object\": \"embedding\",\n"
    "      \"index\": 0,\n"
    "      \"embedding\": [0.5000000,-0.2500000]\n"
    "    },\n"
    "    {\n"
    "      \"object\": \"embedding\",\n"
    "      \"index\": 1,\n"
    "      \"embedding\": [1.0000000,0.0000000]\n"
    "    }\n"
    "  ]";

TEST(EmbeddingPrintout, JsonJsonPlusArrayAndRaw) {
    EXPECT_EQ(format_embedding_printout(small_pair(), "json"), std::string(kJsonList) + "\n}\n\n");
    EXPECT_EQ(format_embedding_printout(small_pair(), "json+"),
              std::string(kJsonList) +
                  ",\n"
                  "  \"cosineSimilarity\": [\n"
                  "    [  1.00,   0.89 ],\n"
                  "    [  0.89,   1.00 ]\n"
                  "  ]\n"
                  "}\n"
                  "\n");
    EXPECT_EQ(format_embedding_printout(small_pair(), "array"), "[[0.5000000,-0.2500000],[1.0000000,0.0000000]]\n\n");
    EXPECT_EQ(format_embedding_printout(small_pair(), "raw"), "0.5000000 -0.2500000\n1.0000000 0.0000000\n\n");
    EmbeddingPrintout ints = small_pair();
    ints.rows = {{32760.0f, -3.0f}, {7.0f, 0.0f}};
    ints.normalize = 0;
    EXPECT_EQ(format_embedding_printout(ints, "array"), "[[32760,-3],[7,0]]\n\n");
    EXPECT_EQ(format_embedding_printout(ints, "raw"), "32760 -3\n7 0\n\n");
    EXPECT_THROW(format_embedding_printout(small_pair(), "yaml"), Error);
}

TEST(EmbeddingPrintout, JsonPlusNeedsSeveralPromptsNotSeveralRows) {
    // One prompt's tokens (pooling none): several rows, no similarity matrix.
    EmbeddingPrintout p = small_pair();
    p.pooling = Pooling::None;
    p.prompts = {"a b"};
    EXPECT_EQ(format_embedding_printout(p, "json+"), std::string(kJsonList) + "\n}\n\n");
}

TEST(EmbeddingPrintout, CosineSimilarityOfZeroVectorsAsLlamaCpp) {
    const std::vector<float> zero(3, 0.0f), one = {1.0f, 0.0f, 0.0f};
    EXPECT_EQ(cosine_similarity(zero, zero), 1.0f);  // two zero vectors are alike
    EXPECT_EQ(cosine_similarity(zero, one), 0.0f);
    EXPECT_FLOAT_EQ(cosine_similarity(one, std::vector<float>{-2.0f, 0.0f, 0.0f}), -1.0f);
}

TEST(EmbeddingPrintout, NormalisationFactorIsAFloatAsLlamaCpp) {
    // common_embd_normalize multiplies by a float 1/|x|: for these values
    // that differs in the last bit from dividing in double.
    std::vector<float> v = {0.1f, 0.7f, 3.3f, -1.9f};
    double sum = 0;
    for (float x : v) sum += x * x;
    const float norm = static_cast<float>(1.0 / std::sqrt(sum));
    std::vector<float> want, in_double;
    for (float x : v) want.push_back(x * norm);
    for (float x : v) in_double.push_back(static_cast<float>(x / std::sqrt(sum)));
    ASSERT_NE(want, in_double);  // else this test could not tell them apart
    normalize_embedding(v, 2);
    EXPECT_EQ(v, want);
}

TEST(EmbeddingRankTokens, CliJoinsQueryAndDocumentWithSepTextAndAddsSpecials) {
    model::SyntheticModelSpec spec = model::SyntheticModelSpec::tiny("bert");
    spec.classifier_head = true;
    const auto path = (test::temp_dir() / "rank-tokens-bert.gguf").string();
    model::write_synthetic_model(spec, path);
    const auto model = model::Model::load(path);
    const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
    ASSERT_TRUE(vocab.add_sep());
    ASSERT_FALSE(vocab.add_eos());
    const auto q = vocab.tokenize("a b", false, false), d = vocab.tokenize("c", false, false);
    std::vector<TokenId> want = {vocab.bos()};
    want.insert(want.end(), q.begin(), q.end());
    want.push_back(vocab.sep());
    want.insert(want.end(), d.begin(), d.end());
    want.push_back(vocab.sep());  // llama-embedding's final [SEP]; the server's rerank_tokens has none
    EXPECT_EQ(rerank_cli_tokens(*model, vocab, "a b\tc", "\t"), want);
    std::vector<TokenId> server = want;
    server.pop_back();
    EXPECT_EQ(rerank_tokens(*model, vocab, "a b", "c"), server);
    // No separator in the line: the line as it is, with the specials.
    EXPECT_EQ(rerank_cli_tokens(*model, vocab, "a b c", "\t"), vocab.tokenize("a b c", true, true));
}

}  // namespace
}  // namespace cria::runtime
