#pragma once
// Speculative generation for cria run and cria speculative: the prompt,
// then a loop over the speculative step (step.h) on sequence 0 of a
// context, until n_predict tokens, an end-of-generation token, a full
// context or the callback says stop. Drafting, verification (rejection
// sampling or sample-and-compare), rollback, adaptive drafting and metrics
// are the step's, shared with the server.

#include <functional>
#include <memory>
#include <vector>

#include "cria/runtime/generate.h"
#include "cria/sampling/params.h"
#include "cria/spec/drafter.h"
#include "cria/spec/metrics.h"
#include "cria/spec/ngram.h"
#include "cria/spec/params.h"
#include "cria/spec/registry.h"
#include "cria/spec/step.h"

namespace cria::spec {

// A prompt its caller decodes (one with images: the media module's, which
// speculation knows nothing of). `positions` has one entry per position the
// prompt takes: its token, or for an image position a placeholder below 0
// (text_positions.h); the last entry is a token. decode(ctx, n, features)
// decodes positions [0, n) into sequence 0 of a cleared ctx, the last one
// with logits; with `features` every row is an output and the captured
// streams of every position are appended to it, in position order.
// embedding_at gives the image positions' input embeddings (may be empty).
struct DecodedPrompt {
    std::vector<TokenId> positions;
    std::function<void(runtime::Context& ctx, size_t n, std::vector<float>* features)> decode;
    EmbeddingAt embedding_at;
};

class Speculator {
public:
    Speculator(const SpecParams& params, std::vector<std::unique_ptr<Drafter>> drafters);

    // The sampling the chains passed to generate() follow: temperature > 0
    // verifies drafts with probabilities by rejection sampling, and the
    // seed seeds the drafters and the verifier (the n-th generate() call of
    // a seeded Speculator gets the n-th seed of that seed's sequence: same
    // seed, same outputs). Default: greedy.
    void set_sampling(const sampling::SamplingParams& sampling);

    // As runtime::generate, with speculation. Sequence 0 of ctx from position
    // 0 (the cache is cleared first). Metrics of this call: metrics().
    runtime::GenerationResult generate(runtime::Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain,
                                       const std::vector<TokenId>& prompt, int n_predict,
                                       const std::function<bool(TokenId)>& on_token = {});
    // The same for a prompt the caller decodes (images in it): greedy output
    // equals plain decoding of the same prompt with every drafter.
    runtime::GenerationResult generate(runtime::Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain,
                                       const DecodedPrompt& prompt, int n_predict,
                                       const std::function<bool(TokenId)>& on_token = {});

    const Metrics& metrics() const { return step_.metrics(); }
    const std::vector<std::unique_ptr<Drafter>>& drafters() const { return drafters_; }

private:
    static std::vector<Drafter*> pointers(const std::vector<std::unique_ptr<Drafter>>& drafters);
    SpecParams params_;
    std::vector<std::unique_ptr<Drafter>> drafters_;
    SpeculativeStep step_;
    sampling::SamplingParams sampling_;
    sampling::Rng request_seeds_;  // one request seed per generate() call
};

// The drafters `params` asks for, in llama.cpp's order (ngram-simple,
// ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache, then the draft model),
// each built by its registered factory (registry.h). "-lcs"/"-lcd" of
// llama.cpp are --spec-ngram-cache-static/-dynamic here. The draft model is
// built by make_draft_model_drafter. `shared`: what several calls (the
// server's slots) share; the factories fill in what they create (the
// ngram-mod pool, the loaded draft model). Throws cria::Error for an
// unknown or unavailable drafter.
std::vector<std::unique_ptr<Drafter>> make_drafters(const SpecParams& params, const runtime::Context& target,
                                                    const vocab::Vocab& target_vocab,
                                                    DrafterResources* shared = nullptr);

}  // namespace cria::spec
