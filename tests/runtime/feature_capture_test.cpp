// Capturing the target's residual stream during decode() (for drafters that
// read hidden states): what is captured, that it costs no change to the
// logits, and that a prefill and one-token steps capture the same streams.

#include <gtest/gtest.h>

#include <cmath>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

const std::vector<TokenId> kTokens{1, 450, 2035, 118, 306, 1339, 985, 17, 3519, 42};

std::unique_ptr<model::Model> austen() {
    return model::Model::load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
}

ContextParams params_with(std::vector<uint32_t> layers, bool embeddings = false) {
    ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 2;
    p.type_k = p.type_v = ElementType::F32;
    p.capture_layers = std::move(layers);
    p.embeddings = embeddings;
    return p;
}

TEST(FeatureCapture, FirstLayerIsTheEmbeddingAndLastNormsToTheHiddenState) {
    const auto model = austen();
    const model::HParams& hp = model->hparams();
    Context ctx(*model, params_with({0, hp.n_layer}, true));
    ASSERT_EQ(ctx.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    std::vector<float> embd_row(hp.n_embd);
    for (size_t t = 0; t < kTokens.size(); ++t) {
        const auto f = ctx.features(static_cast<int32_t>(t));
        ASSERT_EQ(f.size(), 2u * hp.n_embd);
        // Layer 0's input is the token's embedding row (F32 file: exact).
        const float* row = static_cast<const float*>(model->weights().token_embd.data) + kTokens[t] * hp.n_embd;
        for (uint32_t c = 0; c < hp.n_embd; ++c) ASSERT_EQ(f[c], row[c]) << "token " << t << " value " << c;
        // The stream after the last layer, RMS-normed with output_norm, is the hidden state.
        const float* last = f.data() + hp.n_embd;
        double ss = 0;
        for (uint32_t c = 0; c < hp.n_embd; ++c) ss += static_cast<double>(last[c]) * last[c];
        const double inv = 1.0 / std::sqrt(ss / hp.n_embd + hp.norm_rms_eps);
        const auto hidden = ctx.embeddings(static_cast<int32_t>(t));
        for (uint32_t c = 0; c < hp.n_embd; ++c)
            ASSERT_NEAR(last[c] * inv * model->weights().output_norm[c], hidden[c], 1e-4) << "token " << t;
    }
}

TEST(FeatureCapture, LogitsAreUnchangedAndStepsCaptureWhatThePrefillDoes) {
    const auto model = austen();
    const uint32_t mid = model->hparams().n_layer / 2;
    Context plain(*model, params_with({}));
    Context prefill(*model, params_with({mid, 1}));
    Context steps(*model, params_with({mid, 1}));
    ASSERT_EQ(plain.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    ASSERT_EQ(prefill.decode(Batch::from_tokens(kTokens, 0, 0, true)), 0);
    for (size_t t = 0; t < kTokens.size(); ++t) {
        const auto a = plain.logits(static_cast<int32_t>(t)), b = prefill.logits(static_cast<int32_t>(t));
        ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "capturing changed the logits of token " << t;
        Batch one;
        one.add(kTokens[t], static_cast<int32_t>(t), {0}, true);
        ASSERT_EQ(steps.decode(one), 0);
        const auto fs = steps.features(0), fp = prefill.features(static_cast<int32_t>(t));
        ASSERT_EQ(fs.size(), fp.size());
        for (size_t c = 0; c < fs.size(); ++c) ASSERT_NEAR(fs[c], fp[c], 1e-4) << "token " << t << " value " << c;
    }
    EXPECT_THROW(plain.features(0), Error);
}

TEST(FeatureCapture, LayersBeyondTheModelAreRefused) {
    const auto model = austen();
    EXPECT_THROW(Context(*model, params_with({model->hparams().n_layer + 1})), Error);
}

}  // namespace
}  // namespace cria::runtime
