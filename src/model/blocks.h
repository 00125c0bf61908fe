#pragma once
// The building blocks every architecture is assembled from (one micro-batch
// at a time): embedding lookup, the attention block, the feed-forward block
// and the output head. Each architecture file in archs/ composes them with the
// variants it needs; the blocks themselves only read the activations in the
// workspace and the weights of the layer.

#include <cstdint>

#include "cria/model/model.h"

namespace cria::model::blocks {

// Everything a block needs about the micro-batch being computed.
struct Step {
    ops::Ops& ops;
    const HParams& hp;
    const Weights& w;
    Workspace& ws;
    const ForwardInput& in;
    AttentionMemory& memory;
    const Model& model;
    int64_t n = 0;  // tokens in the micro-batch
    // The layers this process computes (Model::layers()): every
    // architecture's layer loop runs over [layer_begin, layer_end).
    uint32_t layer_begin = 0, layer_end = 0;
    bool first_stage() const { return layer_begin == 0; }
    bool last_stage() const { return layer_end == hp.n_layer; }
};

// A [rows, n] F32 view of a workspace buffer.
ops::TensorView view(std::vector<float>& buf, int64_t rows, int64_t n);

// The positions the rope op reads for this micro-batch: in.positions, or
// under M-RoPE the four streams of text tokens (t = h = w = position, extra 0).
const int32_t* rope_positions(Step& s);

// ws.x = embeddings of the tokens (or a copy of in.embd), scaled by
// sqrt(n_embd) when `scale`, then by hp.embedding_scale when set (granite).
// A later pipeline stage copies in.stream_in instead and returns false (what
// an architecture does to the embeddings themselves is then already done).
bool embed(Step& s, bool scale);

// y = lin(x): the product, then the layer's scale and bias when it has them.
void linear(Step& s, const Linear& lin, const ops::TensorView& x, const ops::TensorView& y);
// y += s · B (A x) for each LoRA adapter term of `lin` in s.in.adapters
// (llama.cpp's build_lora_mm: after the product, before scale and bias), or
// for each row its own set's terms when s.in.lora_rows is set.
void add_lora(Step& s, const Linear& lin, const ops::TensorView& x, const ops::TensorView& y);
// Only the scale and bias (the product was computed as part of a joined matrix).
void finish_linear(Step& s, const Linear& lin, const ops::TensorView& y);

// Q, K and V come from attn_q/k/v or from one fused attn_qkv (the file's, or
// joined at load): whichever the weights hold. Biases and scales are applied
// when the file has them.
struct AttentionOptions {
    bool qk_norm = false;    // qwen3, gemma3: RMSNorm over each q and k head (olmoe: over the whole vectors)
    bool post_norm = false;  // gemma2/3: RMSNorm of the block's output before the residual add
    bool pre_norm = true;    // false (exaone4): the projections read the residual stream itself
    bool output_gate = false;  // muse-glimmer: attention output times sigmoid(attn_gate h), before wo
};

// x += rs · [post_norm](Wo · ([sigmoid(Wg h) ⊙] attention(rope(Wq h), rope(Wk h), Wv h))),
// h = rms_norm(x) (x without pre_norm). Rope is skipped on the layers
// hp.nope_layers marks; rs is hp.residual_scale when set (granite), else 1;
// the post norm's epsilon is hp.post_norm_eps when set. The layer's attention
// sinks join the softmax when the table loaded them.
void attention_block(Step& s, uint32_t layer, const AttentionOptions& options);

// Gate and up come from ffn_gate/ffn_up, or from one product when the file
// fuses them into ffn_up (phi3) or they were joined at load.
struct FfnOptions {
    FfnActivation activation = FfnActivation::Silu;
    bool post_norm = false;
    bool pre_norm = true;  // false (exaone4): the block reads the residual stream itself
};

// x += rs · [post_norm](down · (act(gate h) * up h)), h = rms_norm(x) (x
// without pre_norm); rs as in attention_block.
void ffn_block(Step& s, uint32_t layer, const FfnOptions& options);

// Multi-head latent attention (deepseek2; reusable by the other MLA
// families): h = rms_norm(x) (attn_norm); q = wq h, or wq_b rms_norm(wq_a h)
// (q_a_norm); per head q = [q_nope | q_pe]; [c | k_pe] = wkv_a_mqa h, c
// RMS-normed (kv_a_norm); q_pe and k_pe roped (the layer's rope); scores
// scaled by hp.attention_scale. Absorbed form (hp.mla_absorbed): per head
// Q = [k_b_h^T q_nope | q_pe] against one shared K = [c | k_pe] with V = c
// (the cache keeps the latent), the output per head through v_b. Plain form
// (attn_kv_b): per head K = [k_nope | k_pe], V from wkv_b c. No rope on the
// layers hp.nope_layers marks (kimi-linear: q_pe and k_pe enter unrotated).
// With attn_gate (bailingmoe3: one gate per head; or one per value channel)
// the heads' values are multiplied by sigmoid(attn_gate h). Then
// x += Wo · concat of the heads.
void mla_attention_block(Step& s, uint32_t layer);

// The mixture-of-experts feed-forward block (llama.cpp's build_moe_ffn with
// SwiGLU experts): h = rms_norm(x) (ffn_norm); router logits ffn_gate_inp h;
// the top n_expert_used experts and their weights (HParams' gating,
// renormalisation, scale and expert groups); per selected expert e,
// act(gate_e h, up_e h) (hp.expert_activation; gate and up from one fused
// product when the file fuses them; silu(up_e h) without expert gates), each
// matrix's product times its per-expert scale, then plus its per-expert bias,
// when loaded; x += rs · sum over the ranks j of w_j down_{e_j}(...), rs as in
// attention_block. With latent_down (kimi-k3) the experts read latent_down h
// and their sum goes through latent_norm (when loaded) and latent_up; with
// hp.situ_beta every activation is situ; the layer's SwiGLU limits
// (bailingmoe3) apply to the experts and the shared expert. Every feed-forward
// block leaves its output (before the residual add) in ws.o.
void moe_ffn_block(Step& s, uint32_t layer);

// The gated attention block of qwen3next / qwen35 (HParams::attn_output_gate):
// x += Wo · (attention(rope(norm(q)), rope(norm(k)), v) * sigmoid(gate)),
// [q; gate] per head from attn_q of h = rms_norm(x); no biases.
void gated_attention_block(Step& s, uint32_t layer);

// The gated delta-net block of qwen3next / qwen35 (HParams::is_delta_net):
// see delta_net_block.cpp. Reads and updates each sequence's state through
// s.memory.recurrent_state.
void delta_net_block(Step& s, uint32_t layer);

// The Kimi delta attention block of kimi-linear and bailingmoe3
// (HParams::is_kda): see kda_block.cpp. Reads and updates each sequence's
// state through s.memory.recurrent_state.
void kda_block(Step& s, uint32_t layer);

// Copies the residual stream of the output rows into in.features when
// `layer` is one of in.capture_layers (call before each layer, and with
// n_layer before the output head).
void capture(Step& s, uint32_t layer);

// Final norm of the output rows, then logits (times hp.logit_multiplier, then
// the final softcap) and/or the hidden states. A pipeline stage before the
// last copies the whole residual stream to in.stream_out instead.
void output_head(Step& s, float* logits, float* hidden);

}  // namespace cria::model::blocks

namespace cria::model::blocks {

// The dense transformer most families are: embedding, then per layer the
// attention block and the feed-forward block, then the output head.
void dense_transformer(Step& s, float* logits, float* hidden, bool scale_embeddings, const AttentionOptions& attention,
                       const FfnOptions& ffn);

}  // namespace cria::model::blocks
