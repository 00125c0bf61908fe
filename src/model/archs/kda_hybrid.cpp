// The hyperparameters, tensor table and forward pass shared by kimi-linear
// and bailingmoe3 (llama.cpp's src/models/kimi-linear.cpp and
// bailingmoe3.cpp): see kda_hybrid.h. Their graphs multiply every matrix
// plainly (ggml_mul_mat, or build_lora_mm without a scale): the `.scale`,
// `.input_scale` and q/k/v `.bias` tensors llama.cpp creates for them are
// accepted and not applied.

#include "model/archs/kda_hybrid.h"

#include <cmath>
#include <string>

#include "cria/gguf/file.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"

namespace cria::model::archs {
namespace {

uint32_t require_positive(const HParamsKeys& keys, std::string_view suffix) {
    const uint32_t v = keys.require_u32(suffix);
    if (v == 0) keys.fail("'" + keys.key(suffix) + "' must be positive");
    return v;
}

// A float scalar or one float per layer (llama.cpp's get_key_or_arr), for
// n_layer layers; empty when absent.
std::vector<float> f32_per_layer(const HParamsKeys& keys, std::string_view suffix, uint32_t n_layer) {
    const std::string key = keys.key(suffix);
    const gguf::Value* v = keys.file().find(key);
    if (v == nullptr) return {};
    std::vector<float> out;
    if (!v->is_array()) {
        const std::optional<double> x = v->as_f64();
        if (!x) keys.fail("'" + key + "' must be a number or an array of numbers");
        out.assign(n_layer, static_cast<float>(*x));
        return out;
    }
    if (v->size() < n_layer)
        keys.fail("'" + key + "' has " + std::to_string(v->size()) + " values, fewer than the " +
                  std::to_string(n_layer) + " layers");
    for (uint32_t i = 0; i < n_layer; ++i) {
        const std::optional<double> x = v->at(i).as_f64();
        if (!x) keys.fail("'" + key + "' must hold numbers");
        out.push_back(static_cast<float>(*x));
    }
    return out;
}

ExpertGating gating_from_key(const HParamsKeys& keys) {
    switch (keys.require_u32("expert_gating_func")) {
        case 1: return ExpertGating::Softmax;
        case 2: return ExpertGating::Sigmoid;
        case 3: return ExpertGating::SoftmaxWeight;
        default: keys.fail("'" + keys.key("expert_gating_func") + "' must be 1 (softmax), 2 (sigmoid) or 3");
    }
}

// kimi-k3's feed-forward tensors of layer l: the dense matrices, or the
// router, the experts in the latent width with the latent projections and
// norm, and the optional shared expert at n_embd. All multiplied plainly.
void declare_k3_ffn_tensors(const HParams& hp, TensorTable& t, LayerWeights& lw, uint32_t l) {
    const uint64_t E = hp.n_embd, F = hp.n_ff;
    const auto name = [l](const char* n) { return layer_tensor(l, n); };
    const auto plain = [&](const std::string& base, uint64_t cols, uint64_t rows, Linear* dst,
                           Need need = Need::Required) { t.linear(base, cols, rows, dst, need, ScaleUse::Ignored, false); };
    t.vector(name("ffn_norm.weight"), E, &lw.ffn_norm);
    if (!hp.is_moe(l)) {
        plain(name("ffn_gate"), E, F, &lw.gate);
        plain(name("ffn_up"), E, F, &lw.up);
        t.join({&lw.gate, &lw.up}, &lw.gate_up);
        plain(name("ffn_down"), F, E, &lw.down);
        return;
    }
    const uint64_t X = hp.n_expert, Fe = hp.n_ff_exp, L = hp.n_expert_latent > 0 ? hp.n_expert_latent : E;
    plain(name("ffn_gate_inp"), E, X, &lw.gate_inp);
    t.vector(name("exp_probs_b.bias"), X, &lw.exp_probs_b);
    t.experts(name("ffn_gate_exps"), L, Fe, X, &lw.gate_exps, Need::Required, ScaleUse::Ignored);
    t.experts(name("ffn_up_exps"), L, Fe, X, &lw.up_exps, Need::Required, ScaleUse::Ignored);
    t.experts(name("ffn_down_exps"), Fe, L, X, &lw.down_exps, Need::Required, ScaleUse::Ignored);
    if (hp.n_expert_latent > 0) {
        plain(name("ffn_routed_down"), E, L, &lw.latent_down);
        plain(name("ffn_routed_up"), L, E, &lw.latent_up);
        t.vector(name("ffn_routed_norm.weight"), L, &lw.latent_norm, Need::Optional);
    }
    if (const uint64_t Fs = hp.n_ff_shexp; Fs > 0) {
        plain(name("ffn_gate_shexp"), E, Fs, &lw.gate_shexp);
        plain(name("ffn_up_shexp"), E, Fs, &lw.up_shexp);
        plain(name("ffn_down_shexp"), Fs, E, &lw.down_shexp);
    }
}

}  // namespace

void read_kda_hybrid_hparams(const HParamsKeys& keys, HParams& hp, const KdaHybridOptions& o) {
    hp.rope_order = RopeOrder::Normal;
    const uint32_t nextn = o.bailing ? keys.u32("nextn_predict_layers", 0) : 0;
    if (nextn >= hp.n_layer) keys.fail("'" + keys.key("nextn_predict_layers") + "' must be smaller than block_count");
    hp.n_layer_nextn = nextn;
    const uint32_t n_blocks = hp.n_layer;
    hp.n_layer -= nextn;  // the trunk

    // Which layers are KDA: head_count_kv 0, as llama.cpp decides.
    const std::vector<uint32_t> kv = keys.u32_per_layer("attention.head_count_kv", n_blocks);
    hp.recurrent_layers.assign(hp.n_layer, false);
    for (uint32_t l = 0; l < hp.n_layer && l < kv.size(); ++l) hp.recurrent_layers[l] = kv[l] == 0;
    if (hp.n_head == 0) keys.fail("'" + keys.key("attention.head_count") + "' must be positive");

    // KDA.
    HParams::Kda& kd = hp.kda;
    kd.conv_kernel = require_positive(keys, "ssm.conv_kernel");
    kd.head_dim = require_positive(keys, "kda.head_dim");
    kd.n_heads = hp.n_head;
    if (kd.conv_kernel > 64) keys.fail("'" + keys.key("ssm.conv_kernel") + "' is larger than 64");
    if (kd.head_dim > 1024 || kd.n_heads > 4096)
        keys.fail("KDA state of " + std::to_string(kd.head_dim) + " x " + std::to_string(kd.head_dim) + " x " +
                  std::to_string(kd.n_heads) + " is too large");
    if (o.kimi_k3 && keys.has("kda.gate_lower_bound")) {
        // Unset or -inf: kimi-linear's decay.
        const float lb = keys.f32("kda.gate_lower_bound", -INFINITY);
        if (std::isfinite(lb)) {
            if (!(lb < 0.0f)) keys.fail("'" + keys.key("kda.gate_lower_bound") + "' must be negative");
            kd.gate_lower_bound = lb;
            kd.gate_negates_a = true;
        } else if (!(lb < 0.0f)) {
            keys.fail("'" + keys.key("kda.gate_lower_bound") + "' must be negative");
        }
    }
    if (o.bailing) {
        if (!keys.boolean("kda.safe_gate", true))
            keys.fail("'" + keys.key("kda.safe_gate") + "' false is not supported (llama.cpp requires it)");
        if (!keys.has("kda.gate_lower_bound")) keys.fail("'" + keys.key("kda.gate_lower_bound") + "' is missing");
        kd.gate_lower_bound = keys.f32("kda.gate_lower_bound", 0.0f);
        if (!(kd.gate_lower_bound < 0.0f) || !std::isfinite(kd.gate_lower_bound))
            keys.fail("'" + keys.key("kda.gate_lower_bound") + "' must be finite and negative");
    }
    if (kd.conv_state_floats() > UINT32_MAX || kd.matrix_state_floats() > UINT32_MAX) keys.fail("KDA state too large");
    hp.recurrent_conv_floats = static_cast<uint32_t>(kd.conv_state_floats());
    hp.recurrent_state_floats = static_cast<uint32_t>(kd.matrix_state_floats());

    // MLA, absorbed form only: the cache's one KV head is [latent | k_pe].
    hp.n_lora_kv = require_positive(keys, "attention.kv_lora_rank");
    hp.n_lora_q = keys.u32("attention.q_lora_rank", 0);
    if (o.kimi_k3) {
        // The low-rank query when the first MLA layer has attn_q_a_norm (as
        // llama.cpp decides), and the value is the latent whatever value_length says.
        uint32_t first_mla = 0;
        while (first_mla < hp.n_layer && hp.recurrent_layers[first_mla]) ++first_mla;
        const bool low_rank_q = first_mla < hp.n_layer && keys.has_tensor(layer_tensor(first_mla, "attn_q_a_norm.weight"));
        if (low_rank_q && hp.n_lora_q == 0) keys.fail("'" + keys.key("attention.q_lora_rank") + "' must be positive");
        if (!low_rank_q) hp.n_lora_q = 0;
        hp.head_dim_v = hp.n_lora_kv;
    }
    hp.head_dim_mla = require_positive(keys, "attention.key_length_mla");
    hp.head_dim_v_mla = require_positive(keys, "attention.value_length_mla");
    hp.mla_absorbed = true;
    hp.value_in_key = true;
    bool has_attention = false;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        if (hp.recurrent_layers[l]) continue;
        has_attention = true;
        if (keys.has_tensor(layer_tensor(l, "attn_kv_b.weight")))
            keys.fail("layer " + std::to_string(l) +
                      ": the legacy attn_kv_b form of MLA is not supported (convert with attn_k_b / attn_v_b)");
    }
    if (has_attention && (hp.n_head_kv != 1 || hp.head_dim != hp.n_lora_kv + hp.n_rot || hp.head_dim_v != hp.n_lora_kv))
        keys.fail("the MLA layers need head_count_kv 1, key_length = kv_lora_rank + rope.dimension_count (" +
                  std::to_string(hp.n_lora_kv + hp.n_rot) + ") and value_length = kv_lora_rank (" +
                  std::to_string(hp.n_lora_kv) + ")");
    if (hp.head_dim_mla <= hp.n_rot)
        keys.fail("key_length_mla (" + std::to_string(hp.head_dim_mla) + ") must exceed rope.dimension_count (" +
                  std::to_string(hp.n_rot) + ")");
    hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_mla));
    // kimi-linear's MLA applies no rope (q_pe and k_pe enter unrotated).
    hp.nope_layers.assign(hp.n_layer, !o.bailing);
    if (o.bailing && hp.rope_yarn_ext_factor != 0.0f)
        keys.fail("rope scaling 'yarn' is not supported yet for " + hp.arch_name);

    // Experts.
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for " + hp.arch_name);
    hp.n_layer_dense_lead =
        o.bailing ? keys.require_u32("leading_dense_block_count") : keys.u32("leading_dense_block_count", 0);
    hp.n_ff_exp = require_positive(keys, "expert_feed_forward_length");
    const uint32_t shared = keys.require_u32("expert_shared_count");
    if (o.bailing) {
        hp.n_ff_shexp = keys.u32_or_unset("expert_shared_feed_forward_length", hp.n_ff_exp * std::max(1u, shared));
        hp.expert_weights_norm = keys.boolean("expert_weights_norm", false);
        hp.swiglu_clamp_exp = f32_per_layer(keys, "swiglu_clamp_exp", hp.n_layer);
        hp.swiglu_clamp_shexp = f32_per_layer(keys, "swiglu_clamp_shexp", hp.n_layer);
    } else {
        // The shared expert is optional in llama.cpp's kimi-linear and kimi-k3 tables.
        const uint32_t first_moe = hp.n_layer_dense_lead;
        const bool has_shared = first_moe < hp.n_layer && keys.has_tensor(layer_tensor(first_moe, "ffn_up_shexp.weight"));
        hp.n_ff_shexp = has_shared ? hp.n_ff_exp * std::max(1u, shared) : 0;
        // kimi-linear's graph always renormalises; kimi-k3 reads the key.
        hp.expert_weights_norm = o.kimi_k3 ? keys.boolean("expert_weights_norm", false) : true;
    }
    if (o.kimi_k3) {
        if (!keys.has("attn_res.block_size")) keys.fail("'" + keys.key("attn_res.block_size") + "' is missing");
        hp.attn_res_block_size = keys.u32("attn_res.block_size", 0);
        if (!keys.has("activation.situ_beta") || !keys.has("activation.situ_linear_beta"))
            keys.fail("'" + keys.key("activation.situ_beta") + "' and '" + keys.key("activation.situ_linear_beta") +
                      "' are required");
        hp.situ_beta = keys.f32("activation.situ_beta", 0.0f);
        hp.situ_linear_beta = keys.f32("activation.situ_linear_beta", 0.0f);
        if (!(hp.situ_beta > 0.0f) || !std::isfinite(hp.situ_beta) || !std::isfinite(hp.situ_linear_beta))
            keys.fail("'" + keys.key("activation.situ_beta") + "' must be positive and finite");
        hp.n_expert_latent = keys.u32("expert_latent_length", 0);
        if (hp.n_expert_latent > hp.n_embd)
            keys.fail("'" + keys.key("expert_latent_length") + "' must not exceed embedding_length");
    }
    hp.expert_gating = gating_from_key(keys);
    hp.expert_weights_scale = keys.f32("expert_weights_scale", 0.0f);
    if (hp.n_layer_dense_lead > 0 && hp.n_ff == 0)
        keys.fail("'" + keys.key("feed_forward_length") + "' must be positive for the leading dense layers");
}

void declare_kda_hybrid_tensors(const HParams& hp, TensorTable& t, Weights& w, const KdaHybridOptions& o) {
    const uint64_t E = hp.n_embd, V = hp.n_vocab, H = hp.n_head;
    const HParams::Kda& kd = hp.kda;
    const uint64_t d = kd.head_dim, D = kd.n_value(), K = kd.conv_kernel;
    const uint64_t r = hp.n_lora_kv, rot = hp.n_rot, dqk = hp.head_dim_mla, dv = hp.head_dim_v_mla;
    t.lookup_matrix("token_embd.weight", E, V, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    // kimi-linear and kimi-k3 require output; bailingmoe3 ties it to token_embd when absent.
    t.linear("output", E, V, &w.output, o.bailing ? Need::Optional : Need::Required);

    // Every product plain: scales and q/k/v biases accepted, not applied.
    const auto plain = [&](const std::string& base, uint64_t cols, uint64_t rows, Linear* dst,
                           Need need = Need::Required) { t.linear(base, cols, rows, dst, need, ScaleUse::Ignored, false); };
    DenseTensorOptions ffn;
    ffn.ffn_scales = false;
    ffn.expert_selection_bias = true;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        if (hp.is_kda(l)) {
            KdaWeights& kw = lw.kda;
            plain(name("attn_q"), E, D, &kw.q);
            plain(name("attn_k"), E, D, &kw.k);
            plain(name("attn_v"), E, D, &kw.v);
            t.values(name("ssm_conv1d_q.weight"), {K, 1, D}, &kw.conv_q);
            t.values(name("ssm_conv1d_k.weight"), {K, 1, D}, &kw.conv_k);
            t.values(name("ssm_conv1d_v.weight"), {K, 1, D}, &kw.conv_v);
            if (o.bailing) {
                plain(name("ssm_f_a"), E, D, &kw.f_a);
                plain(name("ssm_g_a"), E, D, &kw.g_a);
            } else if (o.kimi_k3) {
                plain(name("ssm_f_a"), E, d, &kw.f_a);
                plain(name("ssm_f_b"), d, D, &kw.f_b);
                plain(name("ssm_g"), E, D, &kw.g_a);  // one full-rank gate
            } else {
                plain(name("ssm_f_a"), E, d, &kw.f_a);
                plain(name("ssm_f_b"), d, D, &kw.f_b);
                plain(name("ssm_g_a"), E, d, &kw.g_a);
                plain(name("ssm_g_b"), d, D, &kw.g_b);
            }
            plain(name("ssm_beta"), E, H, &kw.beta);
            t.values(name("ssm_a"), o.kimi_k3 ? std::vector<uint64_t>{H} : std::vector<uint64_t>{1, H}, &kw.a);
            t.vector(name("ssm_dt.bias"), D, &kw.dt_bias);
            t.vector(name("ssm_norm.weight"), d, &kw.norm);
            plain(name("attn_output"), D, E, &kw.out);
        } else {
            if (hp.n_lora_q > 0) {
                plain(name("attn_q_a"), E, hp.n_lora_q, &lw.wq_a);
                t.vector(name("attn_q_a_norm.weight"), hp.n_lora_q, &lw.q_a_norm);
                plain(name("attn_q_b"), hp.n_lora_q, H * dqk, &lw.wq_b);
            } else {
                plain(name("attn_q"), E, H * dqk, &lw.wq);
            }
            plain(name("attn_kv_a_mqa"), E, r + rot, &lw.wkv_a_mqa);
            t.vector(name("attn_kv_a_norm.weight"), r, &lw.kv_a_norm);
            t.matrix_stack(name("attn_k_b.weight"), dqk - rot, r, H, &lw.k_b);
            t.matrix_stack(name("attn_v_b.weight"), r, dv, H, &lw.v_b);
            if (o.bailing) plain(name("attn_gate"), E, H, &lw.attn_gate);  // one gate per head
            if (o.kimi_k3) plain(name("attn_gate"), E, H * dv, &lw.attn_gate, Need::Optional);  // per value channel
            // kimi-linear's graph hands attn_output to build_attn, which
            // applies its scale (and bias) as deepseek2's; bailingmoe3 multiplies it plainly.
            if (o.bailing || o.kimi_k3)
                plain(name("attn_output"), H * dv, E, &lw.wo);
            else
                t.linear(name("attn_output"), H * dv, E, &lw.wo);
        }
        if (o.kimi_k3)
            declare_k3_ffn_tensors(hp, t, lw, l);
        else
            declare_ffn_tensors(hp, t, lw, l, ffn);
        if (hp.attn_res_block_size > 0) {
            t.vector(name("attn_res_score.weight"), E, &lw.attn_res_score);
            t.vector(name("ffn_res_score.weight"), E, &lw.ffn_res_score);
        }
    }
    if (hp.attn_res_block_size > 0) t.vector("output_res_score.weight", E, &w.output_res_score);
    // bailingmoe3's MTP layers after the trunk (a drafter's, not run here): accepted.
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l)
        for (const char* base :
             {"attn_norm", "attn_q_a_norm", "attn_kv_a_norm", "attn_q", "attn_q_a", "attn_q_b", "attn_kv_a_mqa",
              "attn_k_b", "attn_v_b", "attn_gate", "attn_output", "ffn_norm", "ffn_gate_inp", "exp_probs_b",
              "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
              "nextn.eh_proj", "nextn.enorm", "nextn.hnorm", "layer_output_norm"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, (std::string(base) + suffix).c_str()));
}

void kda_hybrid_forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, /*scale=*/false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        if (s.hp.is_kda(l))
            blocks::kda_block(s, l);
        else
            blocks::mla_attention_block(s, l);
        if (s.hp.is_moe(l))
            blocks::moe_ffn_block(s, l);
        else
            blocks::ffn_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace cria::model::archs
