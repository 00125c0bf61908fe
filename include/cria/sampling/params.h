#pragma once
// Sampling parameters with llama.cpp's defaults (common/common.h,
// common_params_sampling) and the function that builds llama.cpp's chain
// from them (common/sampling.cpp, common_sampler_init).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cria/sampling/chain.h"
#include "cria/sampling/rng.h"
#include "cria/sampling/samplers.h"

namespace cria::vocab {
class Vocab;
}

namespace cria::sampling {

// The configurable steps of the chain. Letters and names as llama.cpp's
// --sampling-seq / --samplers.
enum class SamplerType { Penalties, Dry, TopNSigma, TopK, TypicalP, TopP, MinP, Xtc, Temperature };

struct SamplingParams {
    uint32_t seed = kRandomSeed;
    int32_t n_prev = 64;
    int32_t min_keep = 0;
    int32_t top_k = 40;              // <= 0: vocabulary size
    float top_p = 0.95f;             // 1.0 disables
    float min_p = 0.05f;             // 0.0 disables
    float xtc_probability = 0.00f;   // 0.0 disables
    float xtc_threshold = 0.10f;     // > 0.5 disables
    float typ_p = 1.00f;             // 1.0 disables
    float temp = 0.80f;              // <= 0.0 samples greedily
    float dynatemp_range = 0.00f;    // 0.0 disables
    float dynatemp_exponent = 1.00f;
    int32_t penalty_last_n = 64;     // 0 disables, -1 = context size
    float penalty_repeat = 1.00f;    // 1.0 disables
    float penalty_freq = 0.00f;      // 0.0 disables
    float penalty_present = 0.00f;   // 0.0 disables
    float dry_multiplier = 0.0f;     // 0.0 disables
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
    int32_t dry_penalty_last_n = -1; // 0 disables, -1 = context size
    int32_t mirostat = 0;            // 0 off, 1 mirostat, 2 mirostat 2.0
    float top_n_sigma = -1.00f;      // <= 0 disables
    float mirostat_tau = 5.00f;
    float mirostat_eta = 0.10f;
    bool ignore_eos = false;         // adds a -inf bias for every end-of-generation token
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
    std::vector<SamplerType> samplers = default_sampler_order();
    std::vector<LogitBias> logit_bias;

    static std::vector<SamplerType> default_sampler_order();
};

// What the chain needs to know about the model and the context.
struct ChainContext {
    const vocab::Vocab* vocab = nullptr;  // needed for DRY breakers, ignore_eos, mirostat v1 n_vocab
    int32_t n_vocab = 0;                  // used when vocab is null
    int32_t n_ctx = 4096;                 // penalty_last_n / dry_penalty_last_n = -1 resolve to this
    int32_t n_ctx_train = 4096;           // DRY's own "context size"
};

// logit bias -> (mirostat == 0) the configured samplers in order, then dist;
// (mirostat 1/2) temperature, then mirostat. Throws cria::Error on invalid
// parameters (last_n < -1, unknown mirostat version, DRY breakers without a vocab).
Chain build_chain(const SamplingParams& params, const ChainContext& context);

// "edskypmxt" <-> sampler types (--sampling-seq). Unknown letters throw.
std::vector<SamplerType> samplers_from_chars(std::string_view chars);
std::string samplers_to_chars(const std::vector<SamplerType>& samplers);
// "penalties;dry;top_k;..." (--samplers): canonical names, and with
// allow_alt_names also "top-k", "nucleus", "typical", "temp", ...; unknown names throw.
std::vector<SamplerType> samplers_from_names(std::string_view names, bool allow_alt_names = true);
std::string samplers_to_names(const std::vector<SamplerType>& samplers);
char sampler_char(SamplerType type);
std::string_view sampler_name(SamplerType type);

}  // namespace cria::sampling
