#pragma once
// The log-probabilities a response reports for a sampled token: of the
// model's own distribution (the raw logits, before any sampling filter),
// with the top alternatives.

#include <cstdint>
#include <span>

#include "cria/server/scheduler.h"
#include "cria/vocab/vocab.h"

namespace cria::server {

// top_n alternatives (most likely first, ties to the lower id).
TokenLogprob token_logprob(std::span<const float> logits, TokenId token, int32_t top_n, const vocab::Vocab& vocab);

}  // namespace cria::server
