// ernie4_5-moe (ERNIE-4.5 MoE): pre-norm llama blocks (rope on adjacent
// pairs) whose first leading_dense_block_count layers keep a dense SwiGLU
// feed-forward and whose other layers are mixtures of SwiGLU experts:
// softmax routing with the optional exp_probs_b selection bias, renormalised,
// no scale, plus an ungated shared expert when
// expert_shared_feed_forward_length > 0.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::Normal;
    if (hp.n_expert == 0) keys.fail("'" + keys.key("expert_count") + "' must be positive for ernie4_5-moe");
    hp.n_ff_exp = keys.u32_or_unset("expert_feed_forward_length", 0);
    hp.n_ff_shexp = keys.u32("expert_shared_feed_forward_length", 0);
    hp.n_layer_dense_lead = keys.u32("leading_dense_block_count", 0);
    // llama.cpp runs layer l as MoE iff l >= lead and (l + 1) % step == 0,
    // but loads expert tensors for every l >= lead: only files where the
    // two agree can run.
    const uint32_t step = keys.u32("interleave_moe_layer_step", 0);
    if (step == 0) keys.fail("'" + keys.key("interleave_moe_layer_step") + "' must be positive");
    for (uint32_t l = hp.n_layer_dense_lead; l < hp.n_layer; ++l)
        if ((l + 1) % step != 0)
            keys.fail("layer " + std::to_string(l) + " has expert tensors but interleave_moe_layer_step " +
                      std::to_string(step) + " makes it dense (llama.cpp cannot run such a file either)");
    hp.expert_gating = ExpertGating::Softmax;
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = 0.0f;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.expert_selection_bias_optional = true;
    // llama.cpp's ernie4_5-moe graph applies neither attn_output's bias nor
    // any feed-forward `.scale` (found on its fixture: NMSE 9e-3 and 0.2
    // the other way); Q/K/V biases and scales are applied.
    o.attn_output_bias = false;
    o.ffn_scales = false;
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kErnie45Moe{"ernie4_5-moe", read_hparams, declare_tensors, forward, reference::llama,
                                        /*supports_experts=*/true};

}  // namespace cria::model::archs
