#pragma once
// Speculative generation: drafters propose, the target verifies.
//
// Every step decodes [last, d1..dn] in one target batch with logits for all,
// then walks the draft:
//   - temperature 0, a grammar, or a drafter without probabilities: sample the
//     target's chain at each position and accept while the sample equals the
//     draft token (sample-and-compare). Every emitted token is a sample of the
//     target given the accepted prefix, drawn in the same order as without
//     speculation: at temperature 0 the output is identical to plain decoding.
//   - temperature > 0 and draft probabilities: rejection sampling (verify.h).
// The accepted tokens plus the target's own next token are emitted, the
// rejected cells are removed from the target's cache (the draft model trims
// its own on its next call), drafters get accept(n) and the adaptive
// controller (adaptive.h) the costs and outcomes.
//
// Several drafters: they are asked in order (draftless ones first, the draft
// model last, as llama.cpp) and the first non-empty draft is verified.

#include <functional>
#include <memory>
#include <vector>

#include "cria/runtime/generate.h"
#include "cria/spec/adaptive.h"
#include "cria/spec/drafter.h"
#include "cria/spec/metrics.h"
#include "cria/spec/params.h"

namespace cria::spec {

class Speculator {
public:
    Speculator(const SpecParams& params, std::vector<std::unique_ptr<Drafter>> drafters);

    // As runtime::generate, with speculation. Sequence 0 of ctx from position
    // 0 (the cache is cleared first). Metrics of this call: metrics().
    runtime::GenerationResult generate(runtime::Context& ctx, const vocab::Vocab& vocab, sampling::Chain& chain,
                                       const std::vector<TokenId>& prompt, int n_predict,
                                       const std::function<bool(TokenId)>& on_token = {});

    const Metrics& metrics() const { return metrics_; }
    const std::vector<std::unique_ptr<Drafter>>& drafters() const { return drafters_; }
    // Whether a step's tokens are verified by rejection sampling (temperature > 0).
    void set_stochastic(bool stochastic) { stochastic_ = stochastic; }

private:
    SpecParams params_;
    std::vector<std::unique_ptr<Drafter>> drafters_;
    Metrics metrics_;
    sampling::Rng rng_;
    bool stochastic_ = false;
};

// The drafters `params` asks for, in llama.cpp's order (ngram-simple,
// ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache, then the draft model).
// "-lcs"/"-lcd" of llama.cpp are --spec-ngram-cache-static/-dynamic here.
// The draft model is loaded from params.draft_model and checked against
// target_vocab; its context copies the target's settings unless overridden.
// `mod_pool` lets several Speculators (server slots) share one ngram-mod pool;
// null creates one (4M entries, 16 MiB). Throws cria::Error for an unknown
// or unavailable drafter.
std::vector<std::unique_ptr<Drafter>> make_drafters(const SpecParams& params, const runtime::Context& target,
                                                    const vocab::Vocab& target_vocab, float temperature,
                                                    std::shared_ptr<NgramModPool> mod_pool = nullptr);

}  // namespace cria::spec
