// phi3: one fused Q/K/V matrix and one fused [gate; up] matrix, SwiGLU,
// LongRoPE frequency factors (short or long set, chosen by the runtime from
// the context size), optional sliding window.

#include "model/blocks.h"

namespace cria::model::archs {

void forward_phi3(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    blocks::AttentionOptions attention;
    attention.layout = blocks::QkvLayout::Fused;
    blocks::FfnOptions ffn;
    ffn.layout = blocks::GateUpLayout::Fused;
    for (uint32_t l = 0; l < s.hp.n_layer; ++l) {
        blocks::attention_block(s, l, attention);
        blocks::ffn_block(s, l, ffn);
    }
    blocks::output_head(s, logits, hidden);
}

}  // namespace cria::model::archs
