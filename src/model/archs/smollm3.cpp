// smollm3: the llama block (adjacent-pair RoPE, SwiGLU) where every fourth
// layer (il = 3, 7, 11, ...) applies no rotary embedding; llama.cpp hard-codes
// the pattern (no GGUF key). Biases and scales on every linear layer are optional.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys&, HParams& hp) {
    hp.rope_order = RopeOrder::Normal;
    for (uint32_t l = 0; l < hp.n_layer; ++l) hp.nope_layers[l] = (l + 1) % 4 == 0;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;  // llama.cpp's smollm3 graph passes no scales to its feed-forward block
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kSmollm3{"smollm3", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
