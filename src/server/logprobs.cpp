// Log-probabilities of a sampled token and its top alternatives.

#include "server/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace cria::server {

TokenLogprob token_logprob(std::span<const float> logits, TokenId token, int32_t top_n, const vocab::Vocab& vocab) {
    const size_t n_vocab = logits.size();
    float max_logit = -INFINITY;
    for (float l : logits) max_logit = std::max(max_logit, l);
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
    const float log_z = max_logit + static_cast<float>(std::log(sum));
    TokenLogprob lp;
    lp.id = token;
    lp.token = vocab.token_to_piece(token);
    lp.logprob = logits[static_cast<size_t>(token)] - log_z;
    const size_t k = std::min(static_cast<size_t>(std::max(top_n, 0)), n_vocab);
    if (k == 0) return lp;
    std::vector<TokenId> ids(n_vocab);
    std::iota(ids.begin(), ids.end(), 0);
    const auto at = [&](TokenId id) { return logits[static_cast<size_t>(id)]; };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                      [&](TokenId a, TokenId b) { return at(a) > at(b) || (at(a) == at(b) && a < b); });
    for (size_t i = 0; i < k; ++i) lp.top.push_back({vocab.token_to_piece(ids[i]), at(ids[i]) - log_z});
    return lp;
}

}  // namespace cria::server
