// olmoe (OLMoE-1B-7B): pre-norm blocks with an RMSNorm over the whole Q and
// K vectors (before the split into heads), NeoX rope, and a mixture of
// SwiGLU experts as wide as feed_forward_length: softmax routing without
// renormalisation, no scale. Q, K and V are plain products (no bias or scale).

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for olmoe");
    hp.n_ff_exp = hp.n_ff;
    hp.expert_gating = ExpertGating::Softmax;
    hp.expert_weights_norm = false;
    hp.expert_weights_scale = 0.0f;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = true;
    o.qk_norm_full = true;
    // llama.cpp's olmoe graph multiplies by attn_q/k/v alone (their biases
    // and `.scale` are not applied) and passes no `.scale` to the experts;
    // attn_output's scale is applied. Found on llama.cpp's fixture: each of
    // these choices is off by NMSE > 1e-3 the other way.
    o.plain_qkv = true;
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    blocks::dense_transformer(s, logits, hidden, false, attention, {});
}

}  // namespace

extern const ArchDefinition kOlmoe{"olmoe", read_hparams, declare_tensors, forward, reference::llama,
                                   /*supports_experts=*/true};

}  // namespace cria::model::archs
