#pragma once
// Multi-head latent attention in float64, shared by the families that use
// it (deepseek2, kimi-linear, bailingmoe3).

#include "model/reference/helpers.h"

namespace cria::model::reference {

// The attention of one MLA layer over every position, before attn_output:
// per position the heads' values (H * head_dim_v_mla), times
// sigmoid(attn_gate h) per head or per value channel when the table loaded
// attn_gate (bailingmoe3). Queries from attn_q or attn_q_a -> attn_q_a_norm
// -> attn_q_b of h = rms_norm(x) (attn_norm); rope on q_pe and k_pe unless
// hp.nope_layers marks the layer; scores scaled by hp.attention_scale.
Rows latent_attention(const Input& in, uint32_t layer, const Rows& x);

}  // namespace cria::model::reference
