// Repetition, frequency and presence penalties over the last n accepted
// tokens (llama_sampler_penalties).

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"
#include "token_history.h"

namespace cria::sampling {
namespace {

class PenaltiesSampler final : public Sampler {
public:
    PenaltiesSampler(int32_t last_n, float repeat, float freq, float present)
        : last_n_(std::max(last_n, 0)), repeat_(repeat), freq_(freq), present_(present),
          history_(static_cast<size_t>(last_n_)) {}

    std::string_view name() const override { return "penalties"; }

    void accept(TokenId token) override {
        if (last_n_ == 0) {
            return;
        }
        ++counts_[token];
        if (history_.full()) {
            const TokenId old = history_.oldest();
            if (--counts_[old] == 0) {
                counts_.erase(old);
            }
        }
        history_.push(token);
    }

    void apply(Candidates& candidates) override {
        if (last_n_ == 0 || (repeat_ == 1.0f && freq_ == 0.0f && present_ == 0.0f)) {
            return;
        }
        entries_.assign(counts_.begin(), counts_.end());
        using Entry = std::pair<TokenId, int>;
        detail::for_each_present<Entry>(
            candidates, entries_, pending_, [](const Entry& e) { return e.first; },
            [&](Candidate& c, const Entry& e) {
                // Dividing a negative logit would make the token MORE likely,
                // hence multiply below zero (the usual fix of the CTRL paper's rule).
                if (c.logit <= 0) {
                    c.logit *= repeat_;
                } else {
                    c.logit /= repeat_;
                }
                c.logit -= static_cast<float>(e.second) * freq_ + static_cast<float>(e.second > 0) * present_;
            });
        candidates.set_sorted(false);
    }

    void reset() override {
        history_.clear();
        counts_.clear();
    }

    std::unique_ptr<Sampler> clone() const override { return std::make_unique<PenaltiesSampler>(*this); }

    PenaltiesSampler(const PenaltiesSampler&) = default;

private:
    int32_t last_n_;
    float repeat_, freq_, present_;
    detail::TokenHistory history_;
    std::unordered_map<TokenId, int> counts_;
    std::vector<std::pair<TokenId, int>> entries_;
    std::vector<const std::pair<TokenId, int>*> pending_;
};

}  // namespace

std::unique_ptr<Sampler> make_penalties(int32_t last_n, float repeat, float freq, float present) {
    return std::make_unique<PenaltiesSampler>(last_n, repeat, freq, present);
}

}  // namespace cria::sampling
