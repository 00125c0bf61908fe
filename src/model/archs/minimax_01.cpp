// minimax-01 (MiniMax-Text-01): lightning-attention layers (linear attention
// with a constant per-head decay, lightning_block.h) interleaved with softmax
// attention layers, each followed by a mixture of SwiGLU experts. Which
// layers are lightning: attention.recurrent_layers, else all but every
// full_attention_interval-th (default 8). The residuals are unusual: with
// alpha = residual_scale (required), each block adds alpha times its own
// normed input, not the stream:
//   u = rms_norm(x) · attn_norm;  h = mixer(u) + alpha u;
//   v = rms_norm(h) · ffn_norm;   x = moe(v) + alpha v.
// Softmax layers: NeoX rope on rope.dimension_count dims, scores scaled by
// 1/sqrt(head_dim), Q/K/V with the file's biases and scales (llama.cpp's
// build_qkv), attn_output's scale used. Experts: softmax
// gating, renormalised, expert_weights_scale when set, no `.scale` per
// expert. Lightning layers: attn_qkv, attn_gate and attn_output plain
// products (llama.cpp passes no scales), attn_norm_2 over all heads. The
// lightning state (head_dim² per head) lives in the recurrent memory.

#include <string>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/lightning_block.h"
#include "model/recurrent_layer_flags.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for minimax-01");
    if (hp.n_head == 0 || hp.n_head_kv == 0 || hp.head_dim == 0)
        keys.fail("'" + keys.key("attention.head_count") + "', '" + keys.key("attention.head_count_kv") + "' and '" +
                  keys.key("attention.key_length") + "' must be positive");
    if (hp.head_dim != hp.head_dim_v) keys.fail("attention.key_length and value_length must be equal");
    if (hp.n_layer < 2) keys.fail("minimax-01 needs at least 2 layers (its decays divide by block_count - 1)");
    if (hp.head_dim > 1024 || static_cast<uint64_t>(hp.head_dim) * hp.head_dim * hp.n_head > (1u << 28))
        keys.fail("a lightning state of " + std::to_string(hp.head_dim) + "² x " + std::to_string(hp.n_head) +
                  " values is too large");
    hp.recurrent_layers = recurrent_layer_flags(keys, hp.n_layer, /*default_interval=*/8);
    hp.recurrent_conv_floats = 0;
    hp.recurrent_state_floats = blocks::lightning_state_floats(hp);
    hp.normed_input_residual = keys.f32("residual_scale", 0.0f);
    if (!(hp.normed_input_residual > 0.0f))
        keys.fail("'" + keys.key("residual_scale") + "' must be positive for minimax-01");
    hp.rope_order = RopeOrder::NeoX;
    hp.n_ff_exp = hp.n_ff;
    hp.expert_gating = ExpertGating::Softmax;
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = keys.f32("expert_weights_scale", 0.0f);
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    // Found on llama.cpp's fixture (each other choice is off by NMSE >= 7e-4):
    // Q/K/V with their biases and scales, experts without their scales.
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);  // softmax attention on the other layers, experts everywhere
    const uint64_t E = hp.n_embd, width = uint64_t{hp.head_dim} * hp.n_head;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        if (!hp.is_recurrent(l)) continue;
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.linear(name("attn_qkv"), E, 3 * width, &lw.wqkv, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.linear(name("attn_gate"), E, width, &lw.attn_gate, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.vector(name("attn_norm_2.weight"), width, &lw.post_attn_norm);
        t.linear(name("attn_output"), width, E, &lw.wo, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
    }
}

// x = ws.o + alpha ws.h: the block's output plus alpha times its normed
// input (both left in the workspace by the block).
void normed_input_residual(blocks::Step& s) {
    const int64_t total = s.n * s.hp.n_embd;
    const float alpha = s.hp.normed_input_residual;
    for (int64_t i = 0; i < total; ++i) {
        const auto k = static_cast<size_t>(i);
        s.ws.x[k] = s.ws.o[k] + alpha * s.ws.h[k];
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    const ops::TensorView x = blocks::view(s.ws.x, s.hp.n_embd, s.n), h = blocks::view(s.ws.h, s.hp.n_embd, s.n);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        if (s.hp.is_recurrent(l)) {
            s.ops.rms_norm(x, s.w.layers[l].attn_norm.data(), s.hp.norm_rms_eps, h);
            blocks::lightning_mixer(s, l);
        } else {
            blocks::attention_block(s, l, {});  // leaves u in ws.h and its output in ws.o
        }
        normed_input_residual(s);
        blocks::moe_ffn_block(s, l);  // leaves v in ws.h and the experts' sum in ws.o
        normed_input_residual(s);
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kMinimax01{"minimax-01", read_hparams, declare_tensors, forward, reference::minimax_01,
                                       /*supports_experts=*/true, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
