// The gemma family: gemma2 and gemma3. Embeddings scaled by sqrt(n_embd),
// RMSNorm both before and after each block (the "post norms"), GeGLU
// feed-forward, sliding-window attention on most layers (the pattern and the
// per-layer rope base are in HParams), gemma2's score and logit softcaps and
// gemma3's Q/K head norms.

#include "model/blocks.h"

namespace cria::model::archs {

void forward_gemma(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, s.hp.scale_embeddings);
    blocks::AttentionOptions attention;
    attention.qk_norm = s.hp.has_qk_norm;
    attention.post_norm = s.hp.has_post_norms;
    blocks::FfnOptions ffn;
    ffn.activation = s.hp.ffn_activation;
    ffn.post_norm = s.hp.has_post_norms;
    for (uint32_t l = 0; l < s.hp.n_layer; ++l) {
        blocks::attention_block(s, l, attention);
        blocks::ffn_block(s, l, ffn);
    }
    blocks::output_head(s, logits, hidden);
}

}  // namespace cria::model::archs
