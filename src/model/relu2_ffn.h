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
