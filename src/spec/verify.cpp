// Rejection sampling of one draft token against the target distribution.

#include "cria/spec/verify.h"

#include <algorithm>
#include <unordered_map>

#include "cria/core/error.h"

namespace cria::spec {

namespace {
float prob_of(std::span<const sampling::Candidate> dist, sampling::TokenId token) {
    for (const auto& c : dist)
        if (c.id == token) return c.p;
    return 0.0f;
}
}  // namespace

RejectionResult rejection_sample(std::span<const sampling::Candidate> p, std::span<const sampling::Candidate> q,
                                 sampling::TokenId token, sampling::Rng& rng) {
    if (p.empty()) throw Error("rejection sampling: empty target distribution");
    const double pt = prob_of(p, token);
    const double qt = prob_of(q, token);
    // q(token) = 0 cannot happen for a token drawn from q; treat it as "accept
    // if the target allows it at all" would bias, so it is a rejection.
    const double u = rng.uniform_double();
    if (qt > 0.0 && u * qt < pt) return {true, token};  // u < p/q without dividing

    // Residual max(0, p - q) over p's support (tokens outside p have p = 0).
    std::unordered_map<sampling::TokenId, float> q_of;
    q_of.reserve(q.size());
    for (const auto& c : q) q_of[c.id] = c.p;
    double total = 0.0;
    std::vector<double> residual(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
        const auto it = q_of.find(p[i].id);
        const double r = std::max(0.0, static_cast<double>(p[i].p) - (it == q_of.end() ? 0.0 : it->second));
        residual[i] = r;
        total += r;
    }
    if (!(total > 0.0)) {
        // p == q up to rounding: the residual is empty; p itself is the answer.
        for (size_t i = 0; i < p.size(); ++i) residual[i] = std::max(0.0f, p[i].p);
        total = 0.0;
        for (double r : residual) total += r;
        if (!(total > 0.0)) throw Error("rejection sampling: the target distribution sums to zero");
    }
    double x = rng.uniform_double() * total;
    for (size_t i = 0; i < p.size(); ++i) {
        x -= residual[i];
        if (x < 0.0) return {false, p[i].id};
    }
    // Rounding left x >= 0: the last token with mass.
    for (size_t i = p.size(); i-- > 0;)
        if (residual[i] > 0.0) return {false, p[i].id};
    return {false, p.back().id};
}

}  // namespace cria::spec
