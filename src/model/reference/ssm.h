#pragma once
// The state-space mixers in float64 (llama.cpp's build_mamba_layer and
// build_mamba2_layer) over a whole sequence from an empty state: the causal
// convolution with zero history, the selective scan token by token. Shared
// by mamba, mamba2 and the hybrids' SSM layers.

#include "model/reference/helpers.h"

namespace cria::model::reference {

// Mamba-1 on the normed inputs h of every position; returns ssm_out's output.
Rows mamba_mixer(const Input& in, uint32_t layer, const Rows& h);
// Mamba-2 on the normed inputs h of every position; returns ssm_out's output.
Rows mamba2_mixer(const Input& in, uint32_t layer, const Rows& h);
// LFM2's gated short convolution on the normed inputs h: out(C ⊙ conv(B ⊙ x)).
Rows shortconv_mixer(const Input& in, uint32_t layer, const Rows& h);

// lfm2 in float64: the short convolution on recurrent layers, attention with
// per-head Q/K norms and NeoX rope (over the window on SWA layers) on the
// others, a SwiGLU feed-forward block after each (registered by archs/lfm2.cpp).
Logits lfm2(const Input& in);
// nemotron_h in float64: each layer one of Mamba-2, attention without rope,
// or a squared-ReLU MLP, each on rms_norm(x) · attn_norm.
Logits nemotron_h(const Input& in);

}  // namespace cria::model::reference
