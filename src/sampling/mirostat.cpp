// Mirostat v1 and v2 (llama_sampler_mirostat / _v2).

#include "cria/sampling/mirostat.h"

#include <algorithm>
#include <cmath>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {

Mirostat::Mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m)
    : n_vocab_(n_vocab), tau_(tau), eta_(eta), m_(m), mu_(2.0f * tau), rng_(seed) {}

void Mirostat::reset() {
    mu_ = 2.0f * tau_;
    rng_.reseed(rng_.seed());
}

void Mirostat::apply(Candidates& candidates) {
    // llama.cpp sorts the whole row; only the best max(m, k) candidates are
    // ever looked at, so we sort just those (same survivors, same order).
    detail::softmax(candidates, false);
    const size_t n = candidates.size();
    const size_t head = std::min(n, static_cast<size_t>(std::max(m_, 1)));
    if (!candidates.sorted()) {
        std::partial_sort(candidates.begin(), candidates.begin() + head, candidates.end(), detail::higher_logit);
    }

    // Estimate the Zipf exponent s from the m most likely tokens (least squares).
    float sum_ti_bi = 0.0f;
    float sum_ti_sq = 0.0f;
    for (size_t i = 0; i + 1 < head && i + 1 < n; ++i) {
        const float t_i = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
        const float b_i = std::log(candidates[i].p / candidates[i + 1].p);
        sum_ti_bi += t_i * b_i;
        sum_ti_sq += t_i * t_i;
    }
    const float s_hat = sum_ti_bi / sum_ti_sq;

    // k from s_hat and the target surprise mu.
    const float epsilon_hat = s_hat - 1.0f;
    float k = std::pow((epsilon_hat * std::pow(2.0f, mu_)) /
                           (1.0f - std::pow(static_cast<float>(n_vocab_), -epsilon_hat)),
                       1.0f / s_hat);
    // llama.cpp computes max(int(k), 1); a NaN or huge k is undefined there. We clamp.
    if (!(k >= 1.0f)) {
        k = 1.0f;
    }
    const size_t keep = std::min(n, k >= static_cast<float>(n) ? n : static_cast<size_t>(k));
    if (!candidates.sorted() && keep > head) {
        std::partial_sort(candidates.begin() + head, candidates.begin() + keep, candidates.end(),
                          detail::higher_logit);
    }
    candidates.truncate(keep);
    candidates.set_sorted(true);
    detail::softmax(candidates, false);

    const size_t idx = detail::draw_index(candidates, rng_.uniform_double());
    candidates.select(static_cast<std::ptrdiff_t>(idx));

    const float observed_surprise = -std::log2(candidates[idx].p);
    mu_ -= eta_ * (observed_surprise - tau_);
}

MirostatV2::MirostatV2(uint32_t seed, float tau, float eta) : tau_(tau), eta_(eta), mu_(2.0f * tau), rng_(seed) {}

void MirostatV2::reset() {
    mu_ = 2.0f * tau_;
    rng_.reseed(rng_.seed());
}

void MirostatV2::apply(Candidates& candidates) {
    detail::softmax(candidates, false);
    // llama.cpp sorts everything and cuts at the first candidate whose
    // surprise -log2 p exceeds mu. Probabilities fall with the sort order, so
    // the kept set is simply {surprise <= mu}: filter, then sort the few survivors.
    if (!candidates.sorted()) {
        size_t best = 0;
        for (size_t i = 1; i < candidates.size(); ++i) {
            if (detail::higher_logit(candidates[i], candidates[best])) {
                best = i;
            }
        }
        // The best always survives (llama.cpp keeps one candidate when none
        // passes); if it fails the test, so does everything less likely.
        std::swap(candidates[0], candidates[best]);
        // surprise <= mu  <=>  p >= 2^-mu: compare with one threshold instead of
        // a log2 per candidate, deciding with the exact test only near the edge.
        const float edge = std::exp2(-mu_);
        auto passes = [&](float p) {
            if (p > edge * 1.0001f) {
                return true;
            }
            if (p < edge * 0.9999f) {
                return false;
            }
            return !(-std::log2(p) > mu_);
        };
        size_t w = 1;
        if (passes(candidates[0].p)) {
            for (size_t i = 1; i < candidates.size(); ++i) {
                if (passes(candidates[i].p)) {
                    std::swap(candidates[w++], candidates[i]);
                }
            }
        }
        std::sort(candidates.begin(), candidates.begin() + w, detail::higher_logit);
        candidates.truncate(w);
    } else {
        size_t w = 0;
        while (w < candidates.size() && !(-std::log2(candidates[w].p) > mu_)) {
            ++w;
        }
        candidates.truncate(std::max<size_t>(w, 1));
    }
    candidates.set_sorted(true);
    detail::softmax(candidates, false);

    const size_t idx = detail::draw_index(candidates, rng_.uniform_double());
    candidates.select(static_cast<std::ptrdiff_t>(idx));

    const float observed_surprise = -std::log2(candidates[idx].p);
    mu_ -= eta_ * (observed_surprise - tau_);
}

std::unique_ptr<Sampler> make_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m) {
    return std::make_unique<Mirostat>(n_vocab, seed, tau, eta, m);
}

std::unique_ptr<Sampler> make_mirostat_v2(uint32_t seed, float tau, float eta) {
    return std::make_unique<MirostatV2>(seed, tau, eta);
}

}  // namespace cria::sampling
