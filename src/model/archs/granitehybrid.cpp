// granitehybrid (Granite 4.0-H, Bamba): granite's block with Mamba-2 mixers.
// A layer with head_count_kv 0 is recurrent (the Mamba-2 mixer, its output
// times residual_scale like granite's attention output); the others are
// granite's attention (RoPE only when rope.scaling.finetuned, default true:
// Granite 4.0-H files say false). Every layer has a SwiGLU feed-forward
// block with optional biases and no `.scale` (granite's graph passes none).
// Embedding, residual and logit scales as granite (logit_scale optional
// here). With experts it is refused for now.

#include <algorithm>
#include <string>
#include <vector>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/ssm_tensors.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_ssm_hparams(keys, hp, SsmKind::Mamba2);
    if (hp.ssm_inner != 2 * hp.n_embd)
        keys.fail("'" + keys.key("ssm.inner_size") + "' must be twice the embedding width (llama.cpp's granitehybrid "
                  "requires it)");
    const std::vector<uint32_t> kv = keys.u32_per_layer("attention.head_count_kv", hp.n_layer);
    hp.recurrent_layers.assign(hp.n_layer, false);
    for (uint32_t l = 0; l < kv.size(); ++l) hp.recurrent_layers[l] = kv[l] == 0;
    if (hp.n_ff == 0) keys.fail("'" + keys.key("feed_forward_length") + "' must be positive");
    if (hp.n_head == 0 && !std::all_of(hp.recurrent_layers.begin(), hp.recurrent_layers.end(), [](bool r) { return r; }))
        keys.fail("the attention layers need '" + keys.key("attention.head_count") + "'");

    hp.rope_order = RopeOrder::Normal;
    if (keys.has_tensor("rope_freqs.weight")) hp.rope_factors_tensor = "rope_freqs.weight";
    const float logit_scale = keys.f32_or_unset("logit_scale", 1.0f);
    hp.logit_multiplier = 1.0f / logit_scale;
    hp.residual_scale = keys.f32("residual_scale", 0.0f);
    hp.embedding_scale = keys.f32("embedding_scale", 0.0f);
    hp.attention_scale = keys.f32_or_unset("attention.scale", hp.attention_scale);
    if (!keys.boolean("rope.scaling.finetuned", true)) hp.nope_layers.assign(hp.n_layer, true);
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;
    o.rope_factors = "rope_freqs.weight";
    declare_dense_tensors(hp, t, w, o);
    for (uint32_t l = 0; l < hp.n_layer; ++l)
        if (hp.is_recurrent(l)) declare_ssm_tensors(hp, t, w.layers[l], l, SsmKind::Mamba2, /*conv_bias_required=*/false);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kGraniteHybrid{"granitehybrid", read_hparams, declare_tensors, forward, reference::llama,
                                           /*supports_experts=*/false, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
