// lfm2 (Liquid LFM2): a hybrid of attention and gated short convolutions. A
// layer with head_count_kv 0 is a short-convolution layer (ssm_block.h:
// y = C ⊙ conv(B ⊙ x), a state of L-1 columns per sequence); the others
// attend with an RMSNorm over each Q and K head and NeoX rope, over a
// sliding window when attention.sliding_window is set. Every layer then has
// a SwiGLU feed-forward block. The final norm is token_embd_norm.weight
// (llama.cpp's historical name). lfm2moe is the same with mixtures of SwiGLU
// experts after the first leading_dense_block_count layers (gating from
// expert_gating_func, the exp_probs_b selection bias, weights always
// renormalised, no scale, no shared expert). The non-causal variant is refused.

#include <string>
#include <vector>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/hparams_keys.h"
#include "model/reference/ssm.h"
#include "model/ssm_block.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    const uint32_t taps = keys.require_u32("shortconv.l_cache");
    if (taps < 2 || taps > 64) keys.fail("'" + keys.key("shortconv.l_cache") + "' must be in 2..64");
    if (!keys.boolean("attention.causal", true))
        keys.fail("the non-causal lfm2 variant (attention.causal = false) is not supported");
    hp.ssm_conv_kernel = taps;
    hp.recurrent_conv_floats = (taps - 1) * hp.n_embd;
    hp.recurrent_state_floats = 0;
    const std::vector<uint32_t> kv = keys.u32_per_layer("attention.head_count_kv", hp.n_layer);
    hp.recurrent_layers.assign(hp.n_layer, false);
    for (uint32_t l = 0; l < kv.size(); ++l) hp.recurrent_layers[l] = kv[l] == 0;
    if (hp.n_ff == 0) keys.fail("'" + keys.key("feed_forward_length") + "' must be positive");
    bool any_attention = false;
    for (uint32_t l = 0; l < hp.n_layer; ++l) any_attention = any_attention || !hp.is_recurrent(l);
    if (any_attention && hp.n_head == 0) keys.fail("the attention layers need '" + keys.key("attention.head_count") + "'");
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
    hp.n_swa = keys.u32_or_unset("attention.sliding_window", 0);
    if (hp.n_swa > 0)
        for (uint32_t l = 0; l < hp.n_layer; ++l) hp.swa_layers[l] = !hp.is_recurrent(l);
}

void read_hparams_moe(const HParamsKeys& keys, HParams& hp) {
    read_hparams(keys, hp);
    if (hp.n_expert == 0) keys.fail("lfm2moe needs experts ('" + keys.key("expert_count") + "')");
    hp.n_ff_exp = keys.require_u32("expert_feed_forward_length");
    if (hp.n_ff_exp == 0) keys.fail("'" + keys.key("expert_feed_forward_length") + "' must be positive");
    switch (keys.require_u32("expert_gating_func")) {
        case 1: hp.expert_gating = ExpertGating::Softmax; break;
        case 2: hp.expert_gating = ExpertGating::Sigmoid; break;
        default: keys.fail("'" + keys.key("expert_gating_func") + "' must be 1 (softmax) or 2 (sigmoid)");
    }
    hp.expert_weights_norm = true;  // llama.cpp's lfm2 graph always renormalises
    hp.expert_weights_scale = 0.0f;
    hp.n_layer_dense_lead = keys.u32("leading_dense_block_count", 0);
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff;
    t.lookup_matrix("token_embd.weight", E, V, &w.token_embd);
    t.vector("token_embd_norm.weight", E, &w.output_norm);  // the final norm
    t.linear("output", E, V, &w.output, Need::Optional);   // absent: tied to token_embd
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        if (hp.is_recurrent(l)) {
            t.linear(name("shortconv.in_proj"), E, 3 * E, &lw.ssm.in);
            t.values(name("shortconv.conv.weight"), {hp.ssm_conv_kernel, E}, &lw.ssm.conv);
            t.linear(name("shortconv.out_proj"), E, E, &lw.ssm.out);
        } else {
            t.linear(name("attn_q"), E, hp.n_embd_q(), &lw.wq);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv);
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
            t.vector(name("attn_q_norm.weight"), hp.head_dim, &lw.q_norm);
            t.vector(name("attn_k_norm.weight"), hp.head_dim, &lw.k_norm);
            t.linear(name("attn_output"), uint64_t{hp.n_head} * hp.head_dim_v, E, &lw.wo);
        }
        t.vector(name("ffn_norm.weight"), E, &lw.ffn_norm);
        if (hp.is_moe(l)) {
            const uint64_t X = hp.n_expert, Fe = hp.n_ff_exp;
            t.linear(name("ffn_gate_inp"), E, X, &lw.gate_inp);
            t.vector(name("exp_probs_b.bias"), X, &lw.exp_probs_b);
            // llama.cpp's lfm2 graph applies no per-expert scales either.
            t.experts(name("ffn_gate_exps"), E, Fe, X, &lw.gate_exps, Need::Required, ScaleUse::Ignored);
            t.experts(name("ffn_up_exps"), E, Fe, X, &lw.up_exps, Need::Required, ScaleUse::Ignored);
            t.experts(name("ffn_down_exps"), Fe, E, X, &lw.down_exps, Need::Required, ScaleUse::Ignored);
            continue;
        }
        // llama.cpp's lfm2 graph passes no scales to its dense feed-forward block.
        t.linear(name("ffn_gate"), E, F, &lw.gate, Need::Required, ScaleUse::Ignored);
        t.linear(name("ffn_up"), E, F, &lw.up, Need::Required, ScaleUse::Ignored);
        t.join({&lw.gate, &lw.up}, &lw.gate_up);
        t.linear(name("ffn_down"), F, E, &lw.down, Need::Required, ScaleUse::Ignored);
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    blocks::embed(s, false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        if (s.hp.is_recurrent(l))
            blocks::shortconv_block(s, l);
        else
            blocks::attention_block(s, l, attention);
        if (s.hp.is_moe(l))
            blocks::moe_ffn_block(s, l);
        else
            blocks::ffn_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kLfm2{"lfm2", read_hparams, declare_tensors, forward, reference::lfm2,
                                  /*supports_experts=*/false, /*has_recurrent_layers=*/true};
extern const ArchDefinition kLfm2Moe{"lfm2moe", read_hparams_moe, declare_tensors, forward, reference::lfm2,
                                     /*supports_experts=*/true, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
