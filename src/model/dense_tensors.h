#pragma once
// The tensor table of a dense transformer (what blocks::dense_transformer
// reads), shared by the families built on it. Each architecture says which
// of the optional parts it has; biases and `.scale` tensors of every linear
// layer are optional everywhere, as llama.cpp creates them.

#include "cria/model/hparams.h"
#include "cria/model/model.h"
#include "model/tensor_table.h"

namespace cria::model {

struct DenseTensorOptions {
    bool qk_norm = false;      // attn_q_norm / attn_k_norm [head_dim]
    bool post_norms = false;   // post_attention_norm / post_ffw_norm [n_embd]
    bool pre_norms = true;     // attn_norm / ffn_norm [n_embd] (exaone4 has post norms only)
    // The tensor of the feed-forward block's input norm (seed_oss names it
    // post_attention_norm.weight).
    const char* ffn_norm = "ffn_norm.weight";
    bool fused_gate_up = false;  // ffn_up holds [gate; up] (2 n_ff rows), no ffn_gate
    // Whether the feed-forward matrices' `.scale` tensors are used (after the
    // bias, as llama.cpp's build_ffn) or ignored (the graphs of qwen2, gemma2,
    // gemma3, phi3, smollm3, seed_oss, granite and exaone4 pass none; the
    // attention projections' are always used).
    bool ffn_scales = true;
    // A global tensor of n_rot/2 rope frequency divisors, and phi3's second
    // set for long contexts (empty names: none).
    const char* rope_factors = nullptr;
    const char* rope_factors_long = nullptr;
};

void declare_dense_tensors(const HParams& hp, TensorTable& t, Weights& w, const DenseTensorOptions& o);

}  // namespace cria::model
