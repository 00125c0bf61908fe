// qwen2: the llama block with RoPE on the two halves of each head (NeoX
// order); the converter writes biases on Q, K and V (optional here, as every
// bias), and an optional bias on the output projection.

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
    o.ffn_scales = false;  // llama.cpp's qwen2 graph passes no scales to its feed-forward block
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kQwen2{"qwen2", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
