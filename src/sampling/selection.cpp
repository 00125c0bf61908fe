// The selecting samplers: greedy (highest logit) and dist (draw from the softmax).

#include <cmath>
#include <limits>

#include "candidate_ops.h"
#include "cria/core/error.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {
namespace {

class Greedy final : public Sampler {
public:
    std::string_view name() const override { return "greedy"; }
    void apply(Candidates& candidates) override {
        if (candidates.empty()) {
            candidates.select(-1);
            return;
        }
        size_t best = 0;  // the first of equal maxima, as llama.cpp
        for (size_t i = 1; i < candidates.size(); ++i) {
            if (candidates[i].logit > candidates[best].logit) {
                best = i;
            }
        }
        if (candidates[best].logit == -std::numeric_limits<float>::infinity()) {
            throw Error("sampling: every candidate has logit -inf (all tokens are banned)");
        }
        candidates.select(static_cast<std::ptrdiff_t>(best));
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Greedy>(); }
};

class Dist final : public Sampler {
public:
    explicit Dist(uint32_t seed) : rng_(seed) {}
    std::string_view name() const override { return "dist"; }
    void apply(Candidates& candidates) override {
        if (candidates.empty()) {
            candidates.select(-1);
            return;
        }
        // One softmax pass (sum in double), then the draw: as llama.cpp, the
        // RNG is consumed only when there is more than one candidate.
        if (candidates.size() == 1) {
            if (candidates[0].logit == -std::numeric_limits<float>::infinity()) {
                throw Error("sampling: every candidate has logit -inf (all tokens are banned)");
            }
            candidates[0].p = 1.0f;
            candidates.select(0);
            return;
        }
        const float max_l = detail::max_logit(candidates);
        if (max_l == -std::numeric_limits<float>::infinity()) {
            throw Error("sampling: every candidate has logit -inf (all tokens are banned)");
        }
        double sum = 0.0;
        for (Candidate& c : candidates) {
            c.p = std::exp(c.logit - max_l);
            sum += c.p;
        }
        const double target = sum * rng_.uniform_double();
        double running = 0.0;
        std::ptrdiff_t chosen = -1;
        std::ptrdiff_t last_positive = 0;
        for (size_t i = 0; i < candidates.size(); ++i) {
            Candidate& c = candidates[i];
            if (chosen < 0 && c.p > 0.0f) {
                running += c.p;
                last_positive = static_cast<std::ptrdiff_t>(i);
                if (running >= target) {
                    chosen = static_cast<std::ptrdiff_t>(i);
                }
            }
            c.p = static_cast<float>(c.p / sum);
        }
        candidates.select(chosen >= 0 ? chosen : last_positive);
    }
    void reset() override { rng_.reseed(rng_.seed()); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Dist>(*this); }

private:
    Rng rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_greedy() { return std::make_unique<Greedy>(); }
std::unique_ptr<Sampler> make_dist(uint32_t seed) { return std::make_unique<Dist>(seed); }

}  // namespace cria::sampling
