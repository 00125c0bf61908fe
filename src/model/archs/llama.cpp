// The llama family: llama, qwen2 (biases on Q/K/V) and qwen3 (RMSNorm over
// each Q and K head). Pre-norm blocks, separate Q/K/V and gate/up matrices,
// SwiGLU feed-forward.

#include "model/blocks.h"

namespace cria::model::archs {

void forward_llama(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    blocks::AttentionOptions attention;
    attention.bias = s.hp.has_qkv_bias;
    attention.qk_norm = s.hp.has_qk_norm;
    blocks::FfnOptions ffn;
    for (uint32_t l = 0; l < s.hp.n_layer; ++l) {
        blocks::attention_block(s, l, attention);
        blocks::ffn_block(s, l, ffn);
    }
    blocks::output_head(s, logits, hidden);
}

}  // namespace cria::model::archs
