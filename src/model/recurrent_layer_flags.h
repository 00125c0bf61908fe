#pragma once
// Which layers of a linear-attention hybrid are recurrent, as llama.cpp
// decides for qwen3next, qwen35* and minimax-01: attention.recurrent_layers
// (one flag per block, integers or booleans, or one scalar for all), else
// every layer but each full_attention_interval-th.

#include <cstdint>
#include <vector>

#include "model/hparams_keys.h"

namespace cria::model {

// Throws (keys.fail) for a flag array of the wrong length or type, or an interval of 0.
std::vector<bool> recurrent_layer_flags(const HParamsKeys& keys, uint32_t n_blocks, uint32_t default_interval);

}  // namespace cria::model
