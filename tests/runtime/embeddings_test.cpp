// Embedding outputs and embedding inputs on stories260K (F32, tied output):
// the hidden state times the output matrix gives the logits; mean pooling is
// the mean of the per-token states; feeding the token embedding rows as input
// embeddings gives the same logits as feeding the tokens.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/quant/quantize.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 29, 77, 300};

std::unique_ptr<model::Model> stories() {
    return model::Model::load(test::model_path("stories260K/stories260K.gguf").string());
}

// Row `id` of the F32 token embedding.
std::vector<float> embedding_row(const model::Model& m, int32_t id) {
    const auto& e = m.weights().token_embd;
    std::vector<float> row(static_cast<size_t>(e.ne[0]));
    quant::dequantize_row(e.type, e.row(id), row.data(), e.ne[0]);
    return row;
}

TEST(Embeddings, HiddenStateTimesOutputGivesLogits) {
    auto m = stories();
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.embeddings = true;
    Context ctx(*m, cp);
    ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    for (int32_t i = 0; i < static_cast<int32_t>(kTokens.size()); ++i) {
        const auto h = ctx.embeddings(i);
        const auto logits = ctx.logits(i);
        for (int32_t v : {0, 5, 261, 511}) {
            const auto row = embedding_row(*m, v);
            double dot = 0;
            for (size_t c = 0; c < row.size(); ++c) dot += double(row[c]) * h[c];
            EXPECT_NEAR(logits[static_cast<size_t>(v)], dot, 1e-3) << "token " << i << " vocab " << v;
        }
    }
}

TEST(Embeddings, MeanPoolingIsTheMeanOfTheStates) {
    auto m = stories();
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    cp.embeddings = true;
    Context per_token(*m, cp);
    ASSERT_EQ(per_token.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    cp.pooling = Pooling::Mean;
    Context pooled(*m, cp);
    ASSERT_EQ(pooled.decode(Batch::from_tokens(kTokens, 0, 0, false)), 0);
    const auto mean = pooled.embeddings_seq(0);
    for (size_t c = 0; c < mean.size(); ++c) {
        double sum = 0;
        for (int32_t i = 0; i < static_cast<int32_t>(kTokens.size()); ++i) sum += per_token.embeddings(i)[c];
        EXPECT_NEAR(mean[c], sum / static_cast<double>(kTokens.size()), 1e-5);
    }
    EXPECT_THROW(pooled.embeddings_seq(1), Error);
    EXPECT_THROW(pooled.logits(0), Error);
}

TEST(Embeddings, InputEmbeddingsEqualTokens) {
    auto m = stories();
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_threads = 2;
    Context a(*m, cp), b(*m, cp);
    ASSERT_EQ(a.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    Batch eb;
    for (size_t i = 0; i < kTokens.size(); ++i) {
        const auto row = embedding_row(*m, kTokens[i]);
        eb.add_embedding(row.data(), static_cast<int32_t>(row.size()), static_cast<int32_t>(i), {0}, true);
    }
    ASSERT_EQ(b.decode(eb), 0);
    for (int32_t i = 0; i < static_cast<int32_t>(kTokens.size()); ++i) {
        const auto x = a.logits(i), y = b.logits(i);
        for (size_t v = 0; v < x.size(); ++v) ASSERT_FLOAT_EQ(x[v], y[v]);
    }
}

TEST(Embeddings, InvalidBatchesAreErrors) {
    auto m = stories();
    ContextParams cp;
    cp.n_ctx = 16;
    cp.n_threads = 1;
    Context ctx(*m, cp);
    Batch bad_token;
    bad_token.add(512, 0, {0}, true);
    EXPECT_THROW(ctx.decode(bad_token), Error);
    Batch bad_seq;
    bad_seq.add(1, 0, {1}, true);  // n_seq_max is 1
    EXPECT_THROW(ctx.decode(bad_seq), Error);
    EXPECT_THROW(ctx.decode(Batch{}), Error);
    Batch b;
    EXPECT_THROW(b.add(1, 0, {}, true), Error);
    EXPECT_THROW(b.add(1, 0, {64}, true), Error);
    // More tokens than cells: the cache refuses (1), and nothing is kept.
    std::vector<int32_t> many(20, 5);
    EXPECT_EQ(ctx.decode(Batch::from_tokens(many, 0)), 1);
    EXPECT_EQ(ctx.memory_seq_pos_max(0), -1);
    ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0)), 0);
    EXPECT_THROW(ctx.logits(0), Error);  // not flagged
    EXPECT_NO_THROW(ctx.logits(-1));
}

}  // namespace
}  // namespace cria::runtime
