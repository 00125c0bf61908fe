#pragma once
// Mirostat v1 and v2 (Basu et al. 2020): adaptive truncation steering the
// surprise (-log2 p of the chosen token) towards tau. mu starts at 2*tau and
// after each selection becomes mu - eta * (surprise - tau).

#include <cstdint>
#include <memory>
#include <string_view>

#include "cria/sampling/rng.h"
#include "cria/sampling/sampler.h"

namespace cria::sampling {

class Mirostat final : public Sampler {
public:
    Mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m);
    std::string_view name() const override { return "mirostat"; }
    void apply(Candidates& candidates) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<Mirostat>(*this); }
    float mu() const { return mu_; }

private:
    int32_t n_vocab_;
    float tau_, eta_;
    int32_t m_;
    float mu_;
    Rng rng_;
};

class MirostatV2 final : public Sampler {
public:
    MirostatV2(uint32_t seed, float tau, float eta);
    std::string_view name() const override { return "mirostat-v2"; }
    void apply(Candidates& candidates) override;
    void reset() override;
    std::unique_ptr<Sampler> clone() const override { return std::make_unique<MirostatV2>(*this); }
    float mu() const { return mu_; }

private:
    float tau_, eta_;
    float mu_;
    Rng rng_;
};

}  // namespace cria::sampling
