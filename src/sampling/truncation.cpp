// Samplers that keep a subset of the candidates: top-k, top-p, min-p,
// locally typical, top-n-sigma (llama.cpp semantics, cheaper orderings
// where the surviving set is provably the same).

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {
namespace {

class TopK final : public Sampler {
public:
    explicit TopK(int32_t k) : k_(k) {}
    std::string_view name() const override { return "top-k"; }
    void apply(Candidates& candidates) override {
        if (k_ <= 0 || candidates.empty()) {
            return;
        }
        const size_t k = std::min(static_cast<size_t>(k_), candidates.size());
        if (candidates.sorted()) {
            candidates.truncate(k);
        } else {
            detail::keep_top(candidates, k);
        }
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopK>(*this); }

private:
    int32_t k_;
};

class TopP final : public Sampler {
public:
    TopP(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    std::string_view name() const override { return "top-p"; }
    void apply(Candidates& candidates) override {
        if (p_ >= 1.0f || candidates.empty()) {
            return;
        }
        detail::softmax(candidates, false);
        // The nucleus is usually tiny: sort only the best 256 first and sort
        // everything only when they do not reach p (as llama.cpp's adaptive sort).
        size_t sorted_prefix = candidates.size();
        if (!candidates.sorted()) {
            sorted_prefix = std::min<size_t>(256, candidates.size());
            Candidate* first = candidates.begin();
            std::partial_sort(first, first + sorted_prefix, candidates.end(), detail::higher_logit);
        }
        float cum_sum = 0.0f;
        size_t last_idx = candidates.size();
        for (size_t i = 0; i < candidates.size(); ++i) {
            if (i == sorted_prefix) {
                std::sort(candidates.begin() + i, candidates.end(), detail::higher_logit);
                sorted_prefix = candidates.size();
            }
            cum_sum += candidates[i].p;
            if (cum_sum >= p_ && i + 1 >= min_keep_) {
                last_idx = i + 1;
                break;
            }
        }
        if (sorted_prefix < last_idx) {  // kept everything: finish the ordering
            std::sort(candidates.begin() + sorted_prefix, candidates.end(), detail::higher_logit);
        }
        candidates.set_sorted(true);
        candidates.truncate(last_idx);
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopP>(p_, min_keep_); }

private:
    float p_;
    size_t min_keep_;
};

class MinP final : public Sampler {
public:
    MinP(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    std::string_view name() const override { return "min-p"; }
    void apply(Candidates& candidates) override {
        if (p_ <= 0.0f || candidates.empty()) {
            return;
        }
        // p_i >= p * p_max  <=>  logit_i >= max_logit + log(p): no softmax needed.
        if (!candidates.sorted()) {
            const float min_logit = detail::max_logit(candidates) + std::log(p_);
            const size_t kept = static_cast<size_t>(
                std::count_if(candidates.begin(), candidates.end(),
                              [&](const Candidate& c) { return c.logit >= min_logit; }));
            if (kept > 0 && kept >= min_keep_) {
                // stable compaction in place: survivors keep their order
                size_t w = 0;
                for (const Candidate& c : candidates) {
                    if (c.logit >= min_logit) {
                        candidates[w++] = c;
                    }
                }
                candidates.truncate(kept);
                return;
            }
            detail::sort_all(candidates);  // too few: fall back to the sorted rule honouring min_keep
        }
        const float min_logit = candidates[0].logit + std::log(p_);
        size_t i = 1;  // the best candidate always stays
        for (; i < candidates.size(); ++i) {
            if (candidates[i].logit < min_logit && i >= min_keep_) {
                break;
            }
        }
        candidates.truncate(i);
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<MinP>(p_, min_keep_); }

private:
    float p_;
    size_t min_keep_;
};

class Typical final : public Sampler {
public:
    Typical(float p, size_t min_keep) : p_(p), min_keep_(min_keep) {}
    Typical(const Typical& other) : Typical(other.p_, other.min_keep_) {}
    std::string_view name() const override { return "typical"; }
    void apply(Candidates& candidates) override {
        if (p_ >= 1.0f || candidates.empty()) {
            return;
        }
        detail::softmax(candidates, true);
        // A banned candidate (p = 0) adds nothing to the entropy (the limit of
        // p ln p) and is the least typical; llama.cpp would compute 0 * inf = NaN here.
        float entropy = 0.0f;
        for (const Candidate& c : candidates) {
            if (c.p > 0.0f) {
                entropy += -c.p * std::log(c.p);
            }
        }
        // Locally typical: closest surprise (-log p) to the entropy first.
        const size_t n = candidates.size();
        shifted_.resize(n);
        for (size_t i = 0; i < n; ++i) {
            const float p = candidates[i].p;
            shifted_[i] = p > 0.0f ? std::fabs(-std::log(p) - entropy) : std::numeric_limits<float>::infinity();
        }
        order_.resize(n);
        std::iota(order_.begin(), order_.end(), size_t{0});
        std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
            return shifted_[a] < shifted_[b] || (shifted_[a] == shifted_[b] && a < b);
        });
        float cum_sum = 0.0f;
        size_t last_idx = n;
        for (size_t i = 0; i < n; ++i) {
            cum_sum += candidates[order_[i]].p;
            if (cum_sum > p_ && (min_keep_ == 0 || i >= min_keep_ - 1)) {
                last_idx = i + 1;
                break;
            }
        }
        kept_.clear();
        for (size_t i = 0; i < last_idx; ++i) {
            kept_.push_back(candidates[order_[i]]);
        }
        std::copy(kept_.begin(), kept_.end(), candidates.begin());
        candidates.truncate(last_idx);
        candidates.set_sorted(false);
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Typical>(*this); }

private:
    float p_;
    size_t min_keep_;
    std::vector<float> shifted_;
    std::vector<size_t> order_;
    std::vector<Candidate> kept_;
};

class TopNSigma final : public Sampler {
public:
    explicit TopNSigma(float n) : n_(n) {}
    std::string_view name() const override { return "top-n-sigma"; }
    void apply(Candidates& candidates) override {
        if (n_ <= 0.0f || candidates.size() <= 1) {
            return;
        }
        constexpr float kNegInf = -std::numeric_limits<float>::infinity();
        // mean and standard deviation of the finite logits
        float max = candidates[0].logit;
        float sum = 0.0f;
        size_t valid = 0;
        for (const Candidate& c : candidates) {
            if (c.logit != kNegInf) {
                max = std::max(max, c.logit);
                sum += c.logit;
                ++valid;
            }
        }
        const float mean = valid > 0 ? sum / static_cast<float>(valid) : 0.0f;
        float acc = 0.0f;
        for (const Candidate& c : candidates) {
            if (c.logit != kNegInf) {
                acc += static_cast<float>(std::pow(static_cast<double>(c.logit - mean), 2.0));
            }
        }
        const float sigma = valid > 0 ? std::sqrt(acc / static_cast<float>(valid)) : 0.0f;
        const float cut = max - n_ * sigma;
        for (Candidate& c : candidates) {
            if (c.logit < cut) {
                c.logit = kNegInf;
            }
        }
        // llama.cpp ends with a sorted softmax. The masked candidates all tie
        // at -inf, so only the survivors need sorting: move them to the front.
        Candidate* middle = std::partition(candidates.begin(), candidates.end(),
                                           [](const Candidate& c) { return c.logit != kNegInf; });
        std::sort(candidates.begin(), middle, detail::higher_logit);
        candidates.set_sorted(true);
        detail::softmax(candidates, false);
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopNSigma>(*this); }

private:
    float n_;
};

}  // namespace

std::unique_ptr<Sampler> make_top_k(int32_t k) { return std::make_unique<TopK>(k); }
std::unique_ptr<Sampler> make_top_p(float p, size_t min_keep) { return std::make_unique<TopP>(p, min_keep); }
std::unique_ptr<Sampler> make_min_p(float p, size_t min_keep) { return std::make_unique<MinP>(p, min_keep); }
std::unique_ptr<Sampler> make_typical(float p, size_t min_keep) { return std::make_unique<Typical>(p, min_keep); }
std::unique_ptr<Sampler> make_top_n_sigma(float n) { return std::make_unique<TopNSigma>(n); }

}  // namespace cria::sampling
