// muse-glimmer (renamed "Onyx" upstream, after the build we match): the
// token embeddings RMS-normed without a weight; then per layer a pre- and
// post-normed attention block whose output is gated channel by channel by
// sigmoid(attn_gate h) before attn_output, with an RMSNorm over each Q and K
// head, rope (adjacent pairs, base rope.freq_base_swa, no scaling) only on
// the sliding-window layers and none on the full ones; a pre- and post-normed
// SwiGLU block. The two post norms use epsilon 1e-8 (hard-coded in
// llama.cpp), not the file's. Logits times logit_scale (required; granite
// divides by it, this family multiplies), then tanh soft-capped at
// final_logit_softcapping (absent: 30, llama.cpp's default; 0: off).
//
// Which layers slide: attention.sliding_window_pattern, a per-layer array
// (an entry not 0: sliding window) or a scalar period n (the first n-1 of
// every n layers); absent: no sliding-window layer, so no rope at all.
// attention.sliding_window is required.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

// llama.cpp's muse-glimmer graph: the post norms' epsilon, not the file's.
constexpr float kPostNormEps = 1e-8f;
// llama.cpp's default final soft cap, kept when the file has no such key.
constexpr float kDefaultFinalSoftcap = 30.0f;

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    for (const char* required : {"attention.layer_norm_rms_epsilon", "attention.sliding_window", "logit_scale"})
        if (!keys.has(required)) keys.fail("missing required key '" + keys.key(required) + "'");
    if (hp.head_dim_v != hp.head_dim)
        keys.fail("muse-glimmer needs keys and values of one width (key_length " + std::to_string(hp.head_dim) +
                  ", value_length " + std::to_string(hp.head_dim_v) + ")");
    hp.rope_order = RopeOrder::Normal;
    hp.n_swa = keys.u32("attention.sliding_window", 0);
    if (keys.is_array("attention.sliding_window_pattern"))
        hp.swa_layers = keys.layer_flags("attention.sliding_window_pattern", hp.n_layer);
    else if (const auto period = keys.u32("attention.sliding_window_pattern"))
        hp.swa_layers = swa_pattern(hp.n_layer, *period);
    else
        hp.swa_layers.assign(hp.n_layer, false);
    bool any_swa = false;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        hp.nope_layers[l] = !hp.swa_layers[l];  // rope on the sliding-window layers only
        any_swa = any_swa || hp.swa_layers[l];
    }
    if (any_swa && hp.n_swa == 0)
        keys.fail("'" + keys.key("attention.sliding_window") + "' is 0 but sliding_window_pattern marks sliding-window layers");
    hp.rope_freq_base_swa = keys.f32_or_unset("rope.freq_base_swa", hp.rope_freq_base);
    hp.rope_freq_scale_swa = 1.0f;  // llama.cpp never sets a scale for these layers
    hp.logit_multiplier = keys.f32("logit_scale", 1.0f);
    hp.final_softcap = keys.f32("final_logit_softcapping", kDefaultFinalSoftcap);
    if (hp.final_softcap < 0.0f) keys.fail("'" + keys.key("final_logit_softcapping") + "' must not be negative");
    hp.has_qk_norm = true;
    hp.has_post_norms = true;
    hp.post_norm_eps = kPostNormEps;
}

// Every tensor is required, as llama.cpp creates them; no biases but Q/K/V's
// optional ones. `.scale` tensors: the graph applies those of attn_q/k/v
// (build_qkv) and attn_output, none of attn_gate or the feed-forward block.
void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff, Q = hp.n_embd_q();
    t.lookup_matrix("token_embd.weight", E, V, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    t.linear("output", E, V, &w.output);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        if (hp.fused_qkv) {
            t.linear(name("attn_qkv"), E, Q + hp.n_embd_k() + hp.n_embd_v(), &lw.wqkv);
        } else {
            t.linear(name("attn_q"), E, Q, &lw.wq);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv);
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
        }
        t.vector(name("attn_q_norm.weight"), hp.head_dim, &lw.q_norm);
        t.vector(name("attn_k_norm.weight"), hp.head_dim, &lw.k_norm);
        t.linear(name("attn_gate"), E, Q, &lw.attn_gate, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.linear(name("attn_output"), Q, E, &lw.wo, Need::Required, ScaleUse::AfterProduct, /*use_bias=*/false);
        t.vector(name("post_attention_norm.weight"), E, &lw.post_attn_norm);
        t.vector(name("ffn_norm.weight"), E, &lw.ffn_norm);
        t.linear(name("ffn_gate"), E, F, &lw.gate, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.linear(name("ffn_up"), E, F, &lw.up, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.join({&lw.gate, &lw.up}, &lw.gate_up);
        t.linear(name("ffn_down"), F, E, &lw.down, Need::Required, ScaleUse::Ignored, /*use_bias=*/false);
        t.vector(name("post_ffw_norm.weight"), E, &lw.post_ffn_norm);
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    if (blocks::embed(s, /*scale=*/false)) {
        const ops::TensorView x = blocks::view(s.ws.x, s.hp.n_embd, s.n);
        s.ops.rms_norm(x, nullptr, s.hp.norm_rms_eps, x);  // the embeddings' own norm, without a weight
    }
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    attention.post_norm = true;
    attention.output_gate = true;
    blocks::FfnOptions ffn;
    ffn.post_norm = true;
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        blocks::attention_block(s, l, attention);
        blocks::ffn_block(s, l, ffn);
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kMuseGlimmer{"muse-glimmer", read_hparams, declare_tensors, forward,
                                         reference::muse_glimmer};

}  // namespace cria::model::archs
