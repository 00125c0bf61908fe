// Temperature and dynamic temperature (llama_sampler_temp / temp_ext).

#include <algorithm>
#include <cmath>
#include <limits>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {
namespace {

// temp <= 0: keep the first highest logit, set every other one to -inf.
void scale(Candidates& candidates, float temp) {
    if (candidates.empty()) {
        return;
    }
    if (temp <= 0.0f) {
        size_t max_i = 0;
        for (size_t i = 1; i < candidates.size(); ++i) {
            if (candidates[i].logit > candidates[max_i].logit) {
                candidates[max_i].logit = -std::numeric_limits<float>::infinity();
                max_i = i;
            } else {
                candidates[i].logit = -std::numeric_limits<float>::infinity();
            }
        }
        return;
    }
    for (Candidate& c : candidates) {
        c.logit /= temp;
    }
}

class Temperature final : public Sampler {
public:
    explicit Temperature(float temp) : temp_(temp) {}
    std::string_view name() const override { return "temp"; }
    void apply(Candidates& candidates) override { scale(candidates, temp_); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Temperature>(*this); }

private:
    float temp_;
};

class TemperatureExt final : public Sampler {
public:
    TemperatureExt(float temp, float range, float exponent) : temp_(temp), range_(range), exponent_(exponent) {}
    std::string_view name() const override { return "temp-ext"; }
    void apply(Candidates& candidates) override {
        if (range_ <= 0.0f) {
            scale(candidates, temp_);
            return;
        }
        if (candidates.size() <= 1) {
            return;
        }
        const float min_temp = std::max(0.0f, temp_ - range_);
        const float max_temp = temp_ + range_;
        const float max_entropy = -std::log(1.0f / static_cast<float>(candidates.size()));

        // llama.cpp sorts here; entropy does not depend on the order, so we don't.
        detail::softmax(candidates, false);
        float entropy = 0.0f;
        for (const Candidate& c : candidates) {
            if (c.p > 0.0f) {
                entropy -= c.p * std::log(c.p);
            }
        }
        const float normalized = entropy / max_entropy;
        const float dyn_temp = min_temp + (max_temp - min_temp) * std::pow(normalized, exponent_);
        scale(candidates, dyn_temp);

        // probabilities after scaling, in double as llama.cpp
        const double max_l = detail::max_logit(candidates);
        double sum = 0.0;
        for (Candidate& c : candidates) {
            const double p = std::exp(static_cast<double>(c.logit) - max_l);
            c.p = static_cast<float>(p);
            sum += p;
        }
        for (Candidate& c : candidates) {
            c.p = static_cast<float>(c.p / sum);
        }
    }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<TemperatureExt>(*this); }

private:
    float temp_, range_, exponent_;
};

}  // namespace

std::unique_ptr<Sampler> make_temperature(float temp) { return std::make_unique<Temperature>(temp); }
std::unique_ptr<Sampler> make_temperature_ext(float temp, float range, float exponent) {
    return std::make_unique<TemperatureExt>(temp, range, exponent);
}

}  // namespace cria::sampling
