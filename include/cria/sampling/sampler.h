#pragma once
// The sampler interface, as in llama.cpp's llama_sampler_i.
//
// apply() transforms the candidates (filter, rescore) or selects one;
// accept() tells stateful samplers (penalties, DRY, grammar) which token was
// finally chosen; reset() forgets the history and restarts the RNG from the
// seed; clone() copies the sampler including its current state.

#include <memory>
#include <string_view>

#include "cria/sampling/candidates.h"

namespace cria::sampling {

class Sampler {
public:
    virtual ~Sampler() = default;
    virtual std::string_view name() const = 0;
    virtual void apply(Candidates& candidates) = 0;
    virtual void accept(TokenId /*token*/) {}
    virtual void reset() {}
    virtual std::unique_ptr<Sampler> clone() const = 0;
};

}  // namespace cria::sampling
