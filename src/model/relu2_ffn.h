#pragma once
// The squared-ReLU feed-forward block without gate (nemotron_h's MLP layers,
// llama.cpp's build_ffn with LLM_FFN_RELU_SQR and no gate):
// x += down(relu(up(h))²), h = rms_norm(x) · attn_norm (nemotron_h normalises
// every kind of layer with attn_norm). up and down apply their biases and
// `.scale` as the table loaded them.

#include <cstdint>

#include "model/blocks.h"

namespace cria::model::blocks {

void relu2_ffn_block(Step& s, uint32_t layer);

}  // namespace cria::model::blocks

namespace cria::model::blocks {

// nemotron_h_moe's mixture of squared-ReLU experts (no expert gate): h =
// rms_norm(x) · attn_norm; router logits ffn_gate_inp h, sigmoid gating with
// the exp_probs_b selection bias (HParams' renormalisation and scale); the
// experts read latent_down h when the layer has it (else h), each
// down_e(relu(up_e ·)²) times its per-expert scales; their weighted sum goes
// through latent_up when present; plus the shared expert down_s(relu(up_s h)²)
// at full width. x += the sum.
void relu2_moe_block(Step& s, uint32_t layer);

}  // namespace cria::model::blocks
