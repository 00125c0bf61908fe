// gemma2: embeddings scaled by sqrt(n_embd), RMSNorm before and after each
// block (the "post norms"), GeGLU feed-forward, a sliding window on every
// other layer (the first of each pair), and soft caps on the attention scores
// and on the final logits.

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
    hp.n_swa = keys.u32("attention.sliding_window", 4096);
    hp.swa_layers = swa_pattern(hp.n_layer, 2);
    hp.rope_freq_base_swa = hp.rope_freq_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    // llama.cpp's defaults; a zero switches a cap off (tanh(x / 0) has no meaning).
    hp.attn_softcap = keys.f32("attn_logit_softcapping", 50.0f);
    hp.final_softcap = keys.f32("final_logit_softcapping", 30.0f);
    hp.scale_embeddings = true;
    hp.has_post_norms = true;
    hp.ffn_activation = FfnActivation::GeluTanh;
    // Gemma 2 27B scales queries by the model width per head, not the head width.
    if (hp.n_layer == 46) hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.post_norms = true;
    o.ffn_scales = false;  // llama.cpp's gemma2 graph passes no scales to its feed-forward block
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.post_norm = true;
    blocks::FfnOptions ffn;
    ffn.activation = FfnActivation::GeluTanh;
    ffn.post_norm = true;
    blocks::dense_transformer(s, logits, hidden, true, attention, ffn);
}

}  // namespace

extern const ArchDefinition kGemma2{"gemma2", read_hparams, declare_tensors, forward, reference::gemma};

}  // namespace cria::model::archs
