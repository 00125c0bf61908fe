#pragma once
// Factories for every sampler of llama.cpp's chain, with llama.cpp's
// semantics (src/llama-sampling.cpp). Each returns a fresh, independent sampler.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cria/sampling/rng.h"
#include "cria/sampling/sampler.h"

namespace cria::vocab {
class Vocab;
}

namespace cria::sampling {

struct LogitBias {
    TokenId token;
    float bias;
};

// Adds each bias to its token's logit (-inf bans a token).
std::unique_ptr<Sampler> make_logit_bias(std::vector<LogitBias> biases);

// Repetition penalties over the last `last_n` accepted tokens (0 disables;
// resolve -1 = context size before calling). For a token seen c times:
// logit <= 0 ? logit * repeat : logit / repeat, then logit -= c*freq + present.
std::unique_ptr<Sampler> make_penalties(int32_t last_n, float repeat, float freq, float present);

// DRY ("don't repeat yourself"): a token that would extend a repeat of
// length L >= allowed_length gets logit -= multiplier * base^(L - allowed_length).
// Sequence breakers are strings, matched against the vocabulary exactly as
// llama.cpp does (every token containing the string, or a token ending in a
// prefix of it followed by the tokenized rest). context_size is n_ctx_train
// (what penalty_last_n = -1 stands for inside the sampler).
std::unique_ptr<Sampler> make_dry(const vocab::Vocab& vocab, int32_t context_size, float multiplier, float base,
                                  int32_t allowed_length, int32_t penalty_last_n,
                                  const std::vector<std::string>& sequence_breakers);
// The same with breakers given directly as token sequences (head first);
// no vocabulary needed. For tests and callers that tokenized already.
std::unique_ptr<Sampler> make_dry_from_tokens(int32_t context_size, float multiplier, float base,
                                              int32_t allowed_length, int32_t penalty_last_n,
                                              const std::vector<std::vector<TokenId>>& sequence_breakers);

std::unique_ptr<Sampler> make_top_n_sigma(float n);           // <= 0 disables
std::unique_ptr<Sampler> make_top_k(int32_t k);               // <= 0 disables
std::unique_ptr<Sampler> make_typical(float p, size_t min_keep = 1);  // >= 1 disables
std::unique_ptr<Sampler> make_top_p(float p, size_t min_keep = 1);    // >= 1 disables
std::unique_ptr<Sampler> make_min_p(float p, size_t min_keep = 1);    // <= 0 disables
// Exclude Top Choices: with the given probability, removes every candidate
// with p >= threshold except the least likely of them. threshold > 0.5 disables.
std::unique_ptr<Sampler> make_xtc(float probability, float threshold, size_t min_keep, uint32_t seed);
// temp <= 0 keeps only the most likely candidate (greedy).
std::unique_ptr<Sampler> make_temperature(float temp);
// Dynamic temperature: range > 0 maps normalized entropy to
// [temp - range, temp + range] through pow(entropy, exponent); else plain temperature.
std::unique_ptr<Sampler> make_temperature_ext(float temp, float range, float exponent);

// Selecting samplers (they set Candidates::selected).
std::unique_ptr<Sampler> make_greedy();
std::unique_ptr<Sampler> make_dist(uint32_t seed);
// Mirostat v1 (m most likely tokens estimate the Zipf exponent) and v2;
// see mirostat.h for the classes (their mu() can be inspected).
std::unique_ptr<Sampler> make_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m = 100);
std::unique_ptr<Sampler> make_mirostat_v2(uint32_t seed, float tau, float eta);

}  // namespace cria::sampling
