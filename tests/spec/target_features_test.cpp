// Drafters that read the target's hidden state (EAGLE-3, MTP, DFlash): the
// speculative step has the target capture the layers they ask for during its
// own decode, and hands each draft call the streams of the tokens the last
// step accepted, at the right positions. Checked against a separate context
// that captures the same layers over the whole accepted text in one prefill.

#include <gtest/gtest.h>

#include <memory>

#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/runtime/generate.h"
#include "cria/sampling/chain.h"
#include "cria/spec/speculative.h"
#include "support/feature_recorder.h"
#include "support/test_paths.h"

namespace cria::spec {
namespace {

using test::FeatureRecorder;

TEST(TargetFeatures, DraftersGetTheCapturedStreamsOfTheAcceptedTokens) {
    const auto model = model::Model::load(test::model_path("austen-7m/austen-7m-f32.gguf").string());
    const auto vocab = vocab::Vocab::from_gguf(model->file());
    const uint32_t n_layer = model->hparams().n_layer, n_embd = model->hparams().n_embd;
    const std::vector<uint32_t> layers{1, n_layer};

    runtime::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = ElementType::F32;
    sampling::SamplingParams sp;
    sp.temp = 0.0f;
    sampling::ChainContext cc;
    cc.vocab = &vocab;
    const auto prompt = vocab.tokenize("Elizabeth looked at her sister and said", true, true);

    runtime::Context plain_ctx(*model, cp);
    auto plain_chain = sampling::build_chain(sp, cc);
    const auto plain = runtime::generate(plain_ctx, vocab, plain_chain, prompt, 40).tokens;

    SpecParams params;
    params.adaptive = false;
    std::vector<std::unique_ptr<Drafter>> drafters;
    drafters.push_back(std::make_unique<FeatureRecorder>(layers));
    const auto* recorder = static_cast<const FeatureRecorder*>(drafters.back().get());
    Speculator spec(params, std::move(drafters));
    spec.set_sampling(sp);
    runtime::Context ctx(*model, cp);
    auto chain = sampling::build_chain(sp, cc);
    const auto out = spec.generate(ctx, vocab, chain, prompt, 40).tokens;
    EXPECT_EQ(out, plain) << "a drafter reading features leaves greedy output as it is";
    EXPECT_GT(spec.metrics().tokens_accepted(), 0) << "the test wants multi-token verify steps";

    // The streams of the whole text, captured in one prefill.
    std::vector<runtime::TokenId> text = prompt;
    text.insert(text.end(), out.begin(), out.end() - 1);
    runtime::ContextParams rp = cp;
    rp.capture_layers = layers;
    runtime::Context ref(*model, rp);
    ASSERT_EQ(ref.decode(runtime::Batch::from_tokens(text, 0, 0, true)), 0);
    ASSERT_GT(recorder->rows().size(), 20u);
    for (const auto& [pos, row] : recorder->rows()) {
        ASSERT_LT(static_cast<size_t>(pos), text.size());
        const auto want = ref.features(pos);
        ASSERT_EQ(row.size(), 2u * n_embd);
        for (size_t c = 0; c < row.size(); ++c) ASSERT_NEAR(row[c], want[c], 1e-3) << "position " << pos;
    }
}

}  // namespace
}  // namespace cria::spec
