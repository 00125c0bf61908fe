// Logit bias: fixed additive offsets per token (llama_sampler_logit_bias).

#include <vector>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {
namespace {

class LogitBiasSampler final : public Sampler {
public:
    explicit LogitBiasSampler(std::vector<LogitBias> biases) : biases_(std::move(biases)) {}
    std::string_view name() const override { return "logit-bias"; }
    void apply(Candidates& candidates) override {
        if (biases_.empty()) {
            return;
        }
        // Duplicate entries for one token add up (llama.cpp adds them on its
        // fast path but only the first one on its search path).
        detail::for_each_present<LogitBias>(
            candidates, biases_, pending_, [](const LogitBias& b) { return b.token; },
            [](Candidate& c, const LogitBias& b) { c.logit += b.bias; });
        candidates.set_sorted(false);
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<LogitBiasSampler>(biases_); }

private:
    std::vector<LogitBias> biases_;
    std::vector<const LogitBias*> pending_;
};

}  // namespace

std::unique_ptr<Sampler> make_logit_bias(std::vector<LogitBias> biases) {
    return std::make_unique<LogitBiasSampler>(std::move(biases));
}

}  // namespace cria::sampling
