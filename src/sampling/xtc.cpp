// XTC, "exclude top choices" (llama_sampler_xtc): sometimes removes the most
// likely candidates, keeping the least likely of those above the threshold.

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"

namespace cria::sampling {
namespace {

class Xtc final : public Sampler {
public:
    Xtc(float probability, float threshold, size_t min_keep, uint32_t seed)
        : probability_(probability), threshold_(threshold), min_keep_(min_keep), rng_(seed) {}
    std::string_view name() const override { return "xtc"; }
    void apply(Candidates& candidates) override {
        // The RNG is consumed only when XTC could act, as in llama.cpp.
        if (probability_ <= 0.0f || threshold_ > 0.5f || candidates.size() < 2) {
            return;
        }
        if (rng_.uniform_float() > probability_) {
            return;
        }
        detail::softmax(candidates, true);
        size_t pos_last = 0;  // the last (least likely) candidate with p >= threshold
        for (size_t i = 0; i < candidates.size(); ++i) {
            if (candidates[i].p >= threshold_) {
                pos_last = i;
            } else {
                break;
            }
        }
        if (candidates.size() - pos_last >= min_keep_ && pos_last > 0) {
            candidates.drop_front(pos_last);
        }
    }
    void reset() override { rng_.reseed(rng_.seed()); }
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Xtc>(*this); }

private:
    float probability_, threshold_;
    size_t min_keep_;
    Rng rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_xtc(float probability, float threshold, size_t min_keep, uint32_t seed) {
    return std::make_unique<Xtc>(probability, threshold, min_keep, seed);
}

}  // namespace cria::sampling
