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
    bool qk_norm_full = false; // ... over the whole vectors instead: [n_embd_q] / [n_embd_k] (olmoe)
    // attn_q/k/v are plain matrices: the file's biases and `.scale` tensors
    // of them are accepted and not used (olmoe's graph).
    bool plain_qkv = false;
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
    // With experts (hp.n_expert > 0) the feed-forward matrices are the
    // router ffn_gate_inp and the stacked experts ffn_{gate,up,down}_exps;
    // llama (Mixtral) may omit the expert gate (then silu(up)).
    bool expert_gate_optional = false;
    // With a shared expert (hp.n_ff_shexp > 0): ffn_{gate,up,down}_shexp,
    // and its scalar gate ffn_gate_inp_shexp [n_embd] when `shared_expert_gate`.
    bool shared_expert_gate = false;
    // exp_probs_b.bias [n_expert]: added to the gate scores for selection only.
    bool expert_selection_bias = false;
    bool expert_selection_bias_optional = false;  // ... which files may omit (ernie4_5-moe)
    // ffn_{gate,up,down}_exps.bias [rows, n_expert]: per-expert biases (gpt-oss).
    bool expert_biases = false;
    bool attn_output_bias = true;  // false: attn_output.bias is accepted and not applied (ernie4_5-moe)
    // A global tensor of n_rot/2 rope frequency divisors, and phi3's second
    // set for long contexts (empty names: none).
    const char* rope_factors = nullptr;
    const char* rope_factors_long = nullptr;
};

void declare_dense_tensors(const HParams& hp, TensorTable& t, Weights& w, const DenseTensorOptions& o);

}  // namespace cria::model
