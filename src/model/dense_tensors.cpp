#include "model/dense_tensors.h"

#include <string>
#include <utility>

namespace cria::model {

void declare_ffn_tensors(const HParams& hp, TensorTable& t, LayerWeights& lw, uint32_t l, const DenseTensorOptions& o) {
    const uint64_t E = hp.n_embd, F = hp.n_ff;
    const ScaleUse ffn_scale = o.ffn_scales ? ScaleUse::AfterBias : ScaleUse::Ignored;
    const auto name = [l](const char* n) { return layer_tensor(l, n); };
    if (o.pre_norms) t.vector(name(o.ffn_norm), E, &lw.ffn_norm);
    if (hp.is_moe(l)) {
        const uint64_t X = hp.n_expert, Fe = hp.n_ff_exp;
        t.linear(name("ffn_gate_inp"), E, X, &lw.gate_inp);
        if (o.expert_selection_bias || o.expert_selection_bias_optional)
            t.vector(name("exp_probs_b.bias"), X, &lw.exp_probs_b,
                     o.expert_selection_bias ? Need::Required : Need::Optional);
        if (hp.fused_gate_up_exps) {
            t.experts(name("ffn_gate_up_exps"), E, 2 * Fe, X, &lw.gate_up_exps, Need::Required, ffn_scale,
                      o.expert_biases);
        } else {
            t.experts(name("ffn_gate_exps"), E, Fe, X, &lw.gate_exps,
                      o.expert_gate_optional ? Need::Optional : Need::Required, ffn_scale, o.expert_biases);
            t.experts(name("ffn_up_exps"), E, Fe, X, &lw.up_exps, Need::Required, ffn_scale, o.expert_biases);
        }
        t.experts(name("ffn_down_exps"), Fe, E, X, &lw.down_exps, Need::Required, ffn_scale, o.expert_biases);
        if (const uint64_t Fs = hp.n_ff_shexp; Fs > 0) {
            if (o.shared_expert_gate) t.linear(name("ffn_gate_inp_shexp"), E, 1, &lw.gate_inp_shexp);
            t.linear(name("ffn_gate_shexp"), E, Fs, &lw.gate_shexp, Need::Required, ffn_scale);
            t.linear(name("ffn_up_shexp"), E, Fs, &lw.up_shexp, Need::Required, ffn_scale);
            t.linear(name("ffn_down_shexp"), Fs, E, &lw.down_shexp, Need::Required, ffn_scale);
        }
    } else if (o.fused_gate_up) {
        t.linear(name("ffn_up"), E, 2 * F, &lw.up, Need::Required, ffn_scale);
    } else {
        t.linear(name("ffn_gate"), E, F, &lw.gate, Need::Required, ffn_scale);
        t.linear(name("ffn_up"), E, F, &lw.up, Need::Required, ffn_scale);
        t.join({&lw.gate, &lw.up}, &lw.gate_up);
    }
    if (!hp.is_moe(l)) t.linear(name("ffn_down"), F, E, &lw.down, Need::Required, ffn_scale);
}

void declare_dense_tensors(const HParams& hp, TensorTable& t, Weights& w, const DenseTensorOptions& o) {
    const uint64_t E = hp.n_embd, V = hp.n_vocab;
    t.lookup_matrix("token_embd.weight", E, V, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    t.linear("output", E, V, &w.output, Need::Optional);  // absent: tied to token_embd
    if (o.rope_factors) t.vector(o.rope_factors, hp.n_rot / 2, &w.rope_factors, Need::Optional);
    if (o.rope_factors_long) t.vector(o.rope_factors_long, hp.n_rot / 2, &w.rope_factors_long, Need::Optional);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        if (o.pre_norms) t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        // A recurrent layer (hybrids) has a state-space mixer instead of
        // attention (falcon-h1: beside it): its architecture declares those
        // tensors (ssm_tensors.h).
        if (!hp.has_attention(l)) {
        } else if (hp.fused_qkv) {
            t.linear(name("attn_qkv"), E, hp.n_embd_q() + hp.n_embd_k() + hp.n_embd_v(), &lw.wqkv);
        } else if (o.plain_qkv) {
            const std::pair<const char*, std::pair<uint64_t, Linear*>> parts[] = {
                {"attn_q", {hp.n_embd_q(), &lw.wq}}, {"attn_k", {hp.n_embd_k(), &lw.wk}}, {"attn_v", {hp.n_embd_v(), &lw.wv}}};
            for (const auto& [base, p] : parts) {
                const std::string b = name(base);
                t.matrix(b + ".weight", E, p.first, &p.second->w);
                for (const char* suffix : {".bias", ".scale", ".input_scale"}) t.ignored(b + suffix);
            }
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
        } else {
            t.linear(name("attn_q"), E, hp.n_embd_q(), &lw.wq);
            t.linear(name("attn_k"), E, hp.n_embd_k(), &lw.wk);
            t.linear(name("attn_v"), E, hp.n_embd_v(), &lw.wv);
            t.join({&lw.wq, &lw.wk, &lw.wv}, &lw.wqkv);
        }
        if (hp.has_attention(l))
            t.linear(name("attn_output"), uint64_t{hp.n_head} * hp.head_dim_v, E, &lw.wo, Need::Required,
                     ScaleUse::AfterProduct, o.attn_output_bias);
        if (o.qk_norm && hp.has_attention(l)) {
            t.vector(name("attn_q_norm.weight"), o.qk_norm_full ? hp.n_embd_q() : hp.head_dim, &lw.q_norm);
            t.vector(name("attn_k_norm.weight"), o.qk_norm_full ? hp.n_embd_k() : hp.head_dim, &lw.k_norm);
        }
        if (o.post_norms) {
            t.vector(name("post_attention_norm.weight"), E, &lw.post_attn_norm);
            t.vector(name("post_ffw_norm.weight"), E, &lw.post_ffn_norm);
        }
        declare_ffn_tensors(hp, t, lw, l, o);
    }
}

}  // namespace cria::model
