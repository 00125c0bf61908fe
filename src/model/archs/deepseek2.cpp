// deepseek2 (DeepSeek-V2/V3, Kimi-K2, GLM-4.7-Flash...): multi-head latent
// attention (blocks::mla_attention_block) and a mixture of SwiGLU experts
// with an ungated shared expert, after n_layer_dense_lead dense layers.
// Routing: gating from expert_gating_func (0: softmax, or sigmoid for the
// GLM-4.7-Lite shape, as llama.cpp guesses), the optional exp_probs_b
// selection bias, expert groups, expert_weights_norm and expert_weights_scale.
// Queries from attn_q on "lite" models (26 or 27 layers, or 48 with a
// 128256 vocabulary: llama.cpp ignores their q_lora_rank) or when
// q_lora_rank is 0, else from attn_q_a -> attn_q_a_norm -> attn_q_b. Files
// with key_length_mla / value_length_mla hold attn_k_b / attn_v_b and run the
// absorbed form (the cache keeps the latent); older ones hold attn_kv_b and
// run plain multi-head attention. The scores are scaled by mscale^2 /
// sqrt(key_length_mla) as llama.cpp's graph pre-scales them for YaRN.
// MTP layers (nextn_predict_layers) are loaded by llama.cpp and not run:
// accepted, not read.

#include <cmath>
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
    hp.rope_order = RopeOrder::Normal;
    const uint32_t nextn = keys.u32("nextn_predict_layers", 0);
    if (nextn >= hp.n_layer) keys.fail("nextn_predict_layers must be smaller than block_count");
    hp.n_layer_nextn = nextn;
    hp.n_layer -= nextn;  // the trunk
    hp.swa_layers.assign(hp.n_layer, false);
    hp.nope_layers.assign(hp.n_layer, false);
    const uint32_t vocab = keys.u32("vocab_size", 0);

    // Attention.
    const bool lite = hp.n_layer == 26 || hp.n_layer == 27 || (hp.n_layer == 48 && vocab == 128256);
    hp.n_lora_q = lite ? 0 : keys.require_u32("attention.q_lora_rank");
    hp.n_lora_kv = keys.require_u32("attention.kv_lora_rank");
    if (hp.n_lora_kv == 0) keys.fail("'" + keys.key("attention.kv_lora_rank") + "' must be positive");
    const uint32_t k_mla = keys.u32("attention.key_length_mla", 0), v_mla = keys.u32("attention.value_length_mla", 0);
    hp.mla_absorbed = k_mla != 0 && v_mla != 0;
    if (hp.mla_absorbed) {
        // The cache's one KV head: the latent, then the roped key part; the value is the latent.
        if (hp.n_head_kv != 1 || hp.head_dim != hp.n_lora_kv + hp.n_rot || hp.head_dim_v != hp.n_lora_kv)
            keys.fail("an MLA file needs head_count_kv 1, key_length = kv_lora_rank + rope.dimension_count (" +
                      std::to_string(hp.n_lora_kv + hp.n_rot) + ") and value_length = kv_lora_rank (" +
                      std::to_string(hp.n_lora_kv) + ")");
        hp.head_dim_mla = k_mla;
        hp.head_dim_v_mla = v_mla;
        hp.value_in_key = true;
    } else {
        if (hp.n_head_kv != hp.n_head) keys.fail("a deepseek2 file without MLA keys needs head_count_kv = head_count");
        hp.head_dim_mla = hp.head_dim;
        hp.head_dim_v_mla = hp.head_dim_v;
    }
    if (hp.head_dim_mla <= hp.n_rot)
        keys.fail("key_length_mla (" + std::to_string(hp.head_dim_mla) + ") must exceed rope.dimension_count (" +
                  std::to_string(hp.n_rot) + ")");
    if (keys.f32("attention.temperature_scale", 0.0f) != 0.0f)
        keys.fail("'" + keys.key("attention.temperature_scale") + "' (Mistral-Large-3 query scaling) is not supported yet");
    // YaRN (accepted by the common reader since gpt-oss) meets deepseek2's own
    // handling in llama.cpp (the context's yarn_log_multiplier special case
    // and the graph's pre-scaled scores), which this file does not follow
    // yet: refused, as before the common reader took YaRN.
    if (hp.rope_yarn_ext_factor != 0.0f) keys.fail("rope scaling 'yarn' is not supported yet for deepseek2");
    // llama.cpp's graph undoes the context's YaRN magnitude adjustment and
    // puts it into the scores: mscale = attn_factor (1 + 0.1 ln f)
    // (1 + 0.1 ylm ln f), f the scaling factor, ylm the stored log multiplier / 0.1.
    const double ln_f = std::log(1.0 / hp.rope_freq_scale);
    const double ylm = keys.f32("rope.scaling.yarn_log_multiplier", 0.0f) / 0.1;
    const double mscale = hp.rope_attn_factor * (1.0 + 0.1 * ln_f) * (1.0 + 0.1 * ylm * ln_f);
    hp.attention_scale = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(hp.head_dim_mla)));

    // Experts.
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for deepseek2");
    hp.n_layer_dense_lead = keys.u32("leading_dense_block_count", 0);
    hp.n_ff_exp = keys.require_u32("expert_feed_forward_length");
    const uint32_t shared = keys.require_u32("expert_shared_count");
    if (shared == 0) keys.fail("'" + keys.key("expert_shared_count") + "' must be positive (llama.cpp always adds the shared expert)");
    hp.n_ff_shexp = hp.n_ff_exp * shared;
    switch (keys.u32("expert_gating_func", 0)) {
        case 0:
            hp.expert_gating = (hp.n_layer == 47 || hp.n_layer == 48) && vocab == 154880 ? ExpertGating::Sigmoid
                                                                                         : ExpertGating::Softmax;
            break;
        case 1: hp.expert_gating = ExpertGating::Softmax; break;
        case 2: hp.expert_gating = ExpertGating::Sigmoid; break;
        case 3: hp.expert_gating = ExpertGating::SoftmaxWeight; break;
        default: keys.fail("'" + keys.key("expert_gating_func") + "' must be 0, 1 (softmax), 2 (sigmoid) or 3");
    }
    hp.expert_weights_norm = keys.boolean("expert_weights_norm", false);
    hp.expert_weights_scale = keys.f32("expert_weights_scale", 0.0f);
    if (hp.n_layer_dense_lead < hp.n_layer)
        hp.fused_gate_up_exps = keys.has_tensor(layer_tensor(hp.n_layer_dense_lead, "ffn_gate_up_exps.weight"));
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    const uint64_t E = hp.n_embd, H = hp.n_head, r = hp.n_lora_kv, rot = hp.n_rot;
    const uint64_t dqk = hp.head_dim_mla, dv = hp.head_dim_v_mla, nope = dqk - rot;
    t.lookup_matrix("token_embd.weight", E, hp.n_vocab, &w.token_embd);
    t.vector("output_norm.weight", E, &w.output_norm);
    t.linear("output", E, hp.n_vocab, &w.output, Need::Optional);  // absent: tied to token_embd

    // llama.cpp's graph multiplies the feed-forward matrices without their
    // `.scale` tensors (build_ffn and build_moe_ffn get none here).
    DenseTensorOptions o;
    o.ffn_scales = false;
    o.expert_selection_bias_optional = true;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LayerWeights& lw = w.layers[l];
        const auto name = [l](const char* n) { return layer_tensor(l, n); };
        t.vector(name("attn_norm.weight"), E, &lw.attn_norm);
        if (hp.n_lora_q > 0) {
            t.matrix(name("attn_q_a.weight"), E, hp.n_lora_q, &lw.wq_a.w);
            t.vector(name("attn_q_a_norm.weight"), hp.n_lora_q, &lw.q_a_norm);
            t.matrix(name("attn_q_b.weight"), hp.n_lora_q, H * dqk, &lw.wq_b.w);
        } else {
            t.matrix(name("attn_q.weight"), E, H * dqk, &lw.wq.w);
        }
        t.matrix(name("attn_kv_a_mqa.weight"), E, r + rot, &lw.wkv_a_mqa.w);
        t.vector(name("attn_kv_a_norm.weight"), r, &lw.kv_a_norm);
        if (hp.mla_absorbed) {
            t.matrix_stack(name("attn_k_b.weight"), nope, r, H, &lw.k_b);
            t.matrix_stack(name("attn_v_b.weight"), r, dv, H, &lw.v_b);
        } else {
            t.matrix(name("attn_kv_b.weight"), r, H * (nope + dv), &lw.wkv_b.w);
        }
        t.linear(name("attn_output"), H * dv, E, &lw.wo);
        declare_ffn_tensors(hp, t, lw, l, o);
    }
    // The MTP layers: loaded by llama.cpp, never run by this graph.
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l) {
        for (const char* base :
             {"attn_norm", "attn_q_a_norm", "attn_kv_a_norm", "attn_q", "attn_q_a", "attn_q_b", "attn_kv_a_mqa",
              "attn_k_b", "attn_v_b", "attn_kv_b", "attn_output", "ffn_norm", "ffn_gate_inp", "exp_probs_b",
              "ffn_gate_exps", "ffn_up_exps", "ffn_gate_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp",
              "ffn_down_shexp", "ffn_gate", "ffn_up", "ffn_down", "nextn.eh_proj", "nextn.enorm", "nextn.hnorm",
              "nextn.embed_tokens", "nextn.shared_head_head", "nextn.shared_head_norm"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, (std::string(base) + suffix).c_str()));
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        blocks::mla_attention_block(s, l);
        if (s.hp.is_moe(l))
            blocks::moe_ffn_block(s, l);
        else
            blocks::ffn_block(s, l, {});
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kDeepseek2{"deepseek2", read_hparams, declare_tensors, forward, reference::deepseek2,
                                       /*supports_experts=*/true};

}  // namespace cria::model::archs
