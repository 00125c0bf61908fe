#pragma once
// MiniMax-01's lightning-attention layer (llama.cpp's minimax-01 graph), the
// mixer of its recurrent layers: with u the normed layer input in ws.h,
//   [q_h | k_h | v_h] = silu(attn_qkv u) per head,
//   o = lightning attention (Ops::lightning_attention, the state per
//       sequence in AttentionMemory::recurrent_state),
//   o = rms_norm(o) · attn_norm_2 over all heads together (not per head),
//   out = attn_output(o ⊙ sigmoid(attn_gate u)), left in ws.o.
// Head h of layer l decays by exp(-rate) per token, rate = slope_h (1 -
// l / (n_layer - 1) + 1e-5), slope_h = 2^(-8 (h + 1) / H) as llama.cpp
// computes it (H = n_head). Each micro-batch is walked as runs of one
// sequence; when the memory keeps every position (a speculative checkpoint
// is open) the state advances token by token and is recorded after each.

#include <cstdint>
#include <vector>

#include "model/blocks.h"

namespace cria::model::blocks {

// The per-head decay rates of `layer`, in float as llama.cpp computes them.
// Throws cria::Error for fewer than 2 layers (llama.cpp divides by n_layer - 1).
std::vector<float> lightning_decay_rates(const HParams& hp, uint32_t layer);

// The state one lightning layer keeps per sequence: head_dim² · n_head floats.
uint32_t lightning_state_floats(const HParams& hp);

void lightning_mixer(Step& s, uint32_t layer);

}  // namespace cria::model::blocks
