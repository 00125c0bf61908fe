// gemma3: gemma2's block with an RMSNorm over each Q and K head and no soft
// cap on the scores. The sliding window (only when attention.sliding_window
// is set and positive) covers the first n-1 layers of every n
// (sliding_window_pattern, default 6; llama.cpp ignores an array there); those
// layers keep rope base 10000 (rope.freq_base_swa) and no rope scaling.

#include <cmath>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.n_swa = keys.u32("attention.sliding_window", 0);
    if (hp.n_swa > 0) {
        const uint32_t period = keys.is_array("attention.sliding_window_pattern")
                                    ? 6
                                    : keys.u32("attention.sliding_window_pattern", 6);
        hp.swa_layers = swa_pattern(hp.n_layer, period);
    }
    hp.rope_freq_base_swa = keys.f32_or_unset("rope.freq_base_swa", 10000.0f);
    hp.rope_freq_scale_swa = 1.0f;
    hp.final_softcap = keys.f32("final_logit_softcapping", 0.0f);
    hp.scale_embeddings = true;
    hp.has_post_norms = true;
    hp.has_qk_norm = true;
    hp.ffn_activation = FfnActivation::GeluTanh;
    if (hp.n_layer == 62) hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = true;
    o.post_norms = true;
    o.ffn_scales = false;  // llama.cpp's gemma3 graph passes no scales to its feed-forward block
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    attention.post_norm = true;
    blocks::FfnOptions ffn;
    ffn.activation = FfnActivation::GeluTanh;
    ffn.post_norm = true;
    blocks::dense_transformer(s, logits, hidden, true, attention, ffn);
}

}  // namespace

extern const ArchDefinition kGemma3{"gemma3", read_hparams, declare_tensors, forward, reference::gemma};

}  // namespace cria::model::archs
