// exaone4: a post-norm block. No input norms: Q, K, V and the feed-forward
// block read the residual stream itself; an RMSNorm over each Q and K head;
// RMSNorm of each block's output (post_attention_norm, post_ffw_norm) before
// its residual add; NeoX RoPE with the optional rope_freqs divisors; SwiGLU.
// Only a 64-layer trunk (the 32B) has sliding windows: 3 of every 4 layers
// (sliding_window_pattern, default 4; llama.cpp ignores an array, which the
// converter writes) with a window of 4096 unless attention.sliding_window
// says otherwise, and its full-attention layers apply no rope. EXAONE 4.5
// files count their MTP layers (nextn_predict_layers) in block_count: the
// trunk is the layers before them (so a 64-layer trunk slides whatever the
// MTP layers), and the MTP layers' tensors are accepted but not run.

#include <string>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
    hp.has_post_norms = true;
    if (keys.has_tensor("rope_freqs.weight")) hp.rope_factors_tensor = "rope_freqs.weight";
    const uint32_t nextn = keys.u32("nextn_predict_layers", 0);
    if (nextn >= hp.n_layer) keys.fail("nextn_predict_layers must be smaller than block_count");
    hp.n_layer_nextn = nextn;
    hp.n_layer -= nextn;  // the trunk
    hp.swa_layers.assign(hp.n_layer, false);
    hp.nope_layers.assign(hp.n_layer, false);
    if (hp.n_layer == 64) {
        const uint32_t period = keys.is_array("attention.sliding_window_pattern")
                                    ? 4
                                    : keys.u32("attention.sliding_window_pattern", 4);
        hp.swa_layers = swa_pattern(hp.n_layer, period);
        hp.n_swa = keys.u32("attention.sliding_window", 4096);
        for (uint32_t l = 0; l < hp.n_layer; ++l) hp.nope_layers[l] = !hp.swa_layers[l];
    }
    // rope.freq_base_swa is read by llama.cpp but not used: every layer has the global rope.
    hp.rope_freq_base_swa = hp.rope_freq_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;  // llama.cpp's exaone4 graph passes no scales to its feed-forward block
    o.qk_norm = true;
    o.post_norms = true;
    o.pre_norms = false;
    o.rope_factors = "rope_freqs.weight";
    declare_dense_tensors(hp, t, w, o);
    // The MTP layers (llama.cpp loads them and never runs them in this graph).
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l) {
        for (const char* base : {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate", "ffn_up",
                                 "ffn_down", "nextn.eh_proj"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, (std::string(base) + suffix).c_str()));
        for (const char* norm : {"attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm", "nextn.enorm",
                                 "nextn.hnorm", "nextn.shared_head_norm"})
            t.ignored(layer_tensor(l, (std::string(norm) + ".weight").c_str()));
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    attention.post_norm = true;
    attention.pre_norm = false;
    blocks::FfnOptions ffn;
    ffn.post_norm = true;
    ffn.pre_norm = false;
    blocks::dense_transformer(s, logits, hidden, false, attention, ffn);
}

}  // namespace

extern const ArchDefinition kExaone4{"exaone4", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
