#pragma once
// Speculative (rejection) sampling of one draft token (Leviathan et al. 2023,
// Chen et al. 2023): with the target distribution p and the draft's q that
// `token` was drawn from, accept with probability min(1, p(token)/q(token));
// on rejection draw from the residual max(0, p - q), normalised. The token
// that comes out is distributed exactly as p.

#include <span>

#include "cria/sampling/candidates.h"
#include "cria/sampling/rng.h"

namespace cria::spec {

struct RejectionResult {
    bool accepted;
    sampling::TokenId token;  // the draft token, or the residual sample
};

// p and q list each token at most once; missing tokens have probability 0.
// Throws cria::Error when p is empty or sums to zero.
RejectionResult rejection_sample(std::span<const sampling::Candidate> p, std::span<const sampling::Candidate> q,
                                 sampling::TokenId token, sampling::Rng& rng);

}  // namespace cria::spec
