// seed_oss: the qwen2 block (NeoX RoPE, optional Q/K/V biases, SwiGLU) whose
// feed-forward input norm is stored as post_attention_norm.weight.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys&, HParams& hp) { hp.rope_order = RopeOrder::NeoX; }

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;  // llama.cpp's seed_oss graph passes no scales to its feed-forward block
    o.ffn_norm = "post_attention_norm.weight";  // the pre-FFN norm, despite its name
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kSeedOss{"seed_oss", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
