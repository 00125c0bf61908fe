#pragma once
// Small helpers for the sampler tests.

#include <cmath>
#include <initializer_list>
#include <memory>
#include <vector>

#include "cria/sampling/candidates.h"
#include "cria/sampling/sampler.h"

namespace cria::sampling::test {

inline constexpr float kNegInf = -INFINITY;

// Candidates with ids 0..n-1 and logit = log(p), so that softmax gives back p.
inline Candidates from_probs(std::initializer_list<float> probs) {
    std::vector<float> logits;
    for (float p : probs) {
        logits.push_back(std::log(p));
    }
    Candidates c;
    c.fill(logits);
    return c;
}

inline Candidates from_logits(std::vector<float> logits) {
    Candidates c;
    c.fill(logits);
    return c;
}

inline std::vector<TokenId> ids(const Candidates& c) {
    std::vector<TokenId> out;
    for (const Candidate& x : c) {
        out.push_back(x.id);
    }
    return out;
}

inline std::vector<float> logits_of(const Candidates& c) {
    std::vector<float> out;
    for (const Candidate& x : c) {
        out.push_back(x.logit);
    }
    return out;
}

// Logit of token `id` among the candidates (fails the test when absent).
inline float logit_of(const Candidates& c, TokenId id) {
    for (const Candidate& x : c) {
        if (x.id == id) {
            return x.logit;
        }
    }
    ADD_FAILURE() << "token " << id << " not among the candidates";
    return NAN;
}

// Recomputes p = softmax(logit) over the current candidates (double precision),
// independent of the library's softmax.
inline std::vector<double> reference_probs(const Candidates& c) {
    double max_l = -INFINITY;
    for (const Candidate& x : c) {
        max_l = std::max<double>(max_l, x.logit);
    }
    std::vector<double> p;
    double sum = 0;
    for (const Candidate& x : c) {
        p.push_back(std::exp(x.logit - max_l));
        sum += p.back();
    }
    for (double& v : p) {
        v /= sum;
    }
    return p;
}

}  // namespace cria::sampling::test
