// glm4moe (GLM-4.5, GLM-4.5-Air, Solar Open): the pre-norm block with
// optional Q/K/V biases and an optional RMSNorm over each Q and K head, NeoX
// rope over the first rope.dimension_count dims of each head (M-RoPE when
// rope.dimension_sections has t and h sections: GLM-4.5V files; text tokens
// then turn as llama.cpp's text positions say), the feed-forward input norm
// stored as post_attention_norm, n_layer_dense_lead dense layers, then a
// mixture of SwiGLU experts (gating from expert_gating_func, 0 meaning
// sigmoid; the required exp_probs_b selection bias; expert groups,
// expert_weights_norm and expert_weights_scale) plus an ungated shared
// expert. MTP layers (nextn_predict_layers, counted in block_count) are
// loaded by llama.cpp and not run: accepted, not read.

#include <algorithm>
#include <string>

#include "cria/gguf/file.h"
#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/tensor_table.h"

namespace cria::model::archs {
namespace {

void read_rope_sections(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    const gguf::Value* v = keys.file().find(keys.key("rope.dimension_sections"));
    if (v == nullptr) return;
    if (!v->is_array() || v->size() != 4)
        keys.fail("'" + keys.key("rope.dimension_sections") + "' must be an array of 4 integers");
    int sections[4];
    for (size_t i = 0; i < 4; ++i) {
        const auto x = v->at(i).as_i64();
        if (!x || *x < 0 || *x > 1 << 16) keys.fail("'" + keys.key("rope.dimension_sections") + "' must hold small non-negative integers");
        sections[i] = static_cast<int>(*x);
    }
    if (sections[0] > 0 && sections[1] > 0) {  // llama.cpp's use_mrope()
        hp.rope_order = RopeOrder::MRope;
        std::copy(sections, sections + 4, hp.rope_sections);
    }
}

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_rope_sections(keys, hp);
    const uint32_t nextn = keys.u32("nextn_predict_layers", 0);
    if (nextn >= hp.n_layer) keys.fail("nextn_predict_layers must be smaller than block_count");
    hp.n_layer_nextn = nextn;
    hp.n_layer -= nextn;  // the trunk
    hp.swa_layers.assign(hp.n_layer, false);
    hp.nope_layers.assign(hp.n_layer, false);
    if (hp.head_dim != hp.head_dim_v) keys.fail("glm4moe needs key_length = value_length");
    hp.has_qk_norm = keys.has_tensor("blk.0.attn_q_norm.weight");

    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for glm4moe");
    hp.n_layer_dense_lead = keys.u32("leading_dense_block_count", 0);
    hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", hp.n_ff / hp.n_expert_used);
    const uint32_t shared = keys.require_u32("expert_shared_count");
    // llama.cpp always adds the shared branch; without its tensors it would be silu(h) itself.
    if (shared == 0) keys.fail("'" + keys.key("expert_shared_count") + "' must be positive");
    hp.n_ff_shexp = hp.n_ff_exp * shared;
    switch (keys.u32("expert_gating_func", 0)) {
        case 0:
        case 2: hp.expert_gating = ExpertGating::Sigmoid; break;
        case 1: hp.expert_gating = ExpertGating::Softmax; break;
        case 3: hp.expert_gating = ExpertGating::SoftmaxWeight; break;
        default: keys.fail("'" + keys.key("expert_gating_func") + "' must be 0, 1 (softmax), 2 (sigmoid) or 3");
    }
    hp.expert_weights_norm = keys.boolean("expert_weights_norm", false);
    hp.expert_weights_scale = keys.f32("expert_weights_scale", 0.0f);
    if (hp.n_layer_dense_lead < hp.n_layer)
        hp.fused_gate_up_exps = keys.has_tensor(layer_tensor(hp.n_layer_dense_lead, "ffn_gate_up_exps.weight"));
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = hp.has_qk_norm;
    o.ffn_norm = "post_attention_norm.weight";
    o.expert_selection_bias = true;
    // llama.cpp's graph passes no `.scale` to the dense and shared
    // feed-forward blocks, nor to the experts.
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);
    // The MTP layers: loaded by llama.cpp, never run by this graph.
    for (uint32_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l) {
        for (const char* base :
             {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "attn_q_norm", "attn_k_norm",
              "post_attention_norm", "ffn_gate_inp", "exp_probs_b", "ffn_gate_exps", "ffn_up_exps", "ffn_gate_up_exps",
              "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "ffn_gate", "ffn_up", "ffn_down",
              "nextn.eh_proj", "nextn.enorm", "nextn.hnorm", "nextn.embed_tokens", "nextn.shared_head_head",
              "nextn.shared_head_norm"})
            for (const char* suffix : {".weight", ".bias", ".scale", ".input_scale"})
                t.ignored(layer_tensor(l, (std::string(base) + suffix).c_str()));
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = s.hp.has_qk_norm;
    blocks::dense_transformer(s, logits, hidden, false, attention, {});
}

}  // namespace

extern const ArchDefinition kGlm4Moe{"glm4moe", read_hparams, declare_tensors, forward, reference::llama,
                                     /*supports_experts=*/true};

}  // namespace cria::model::archs
