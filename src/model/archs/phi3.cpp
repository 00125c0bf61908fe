// phi3: Q, K and V as one fused attn_qkv matrix or three, gate and up fused
// into ffn_up ([gate; up], 2 n_ff rows), SwiGLU, NeoX RoPE with LongRoPE's
// per-dimension divisors (rope_factors_short, or _long for contexts beyond
// the original one: the runtime picks). llama.cpp reads phi3's sliding
// window but does not apply it (results differ from the reference
// implementation otherwise); so do we.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.fused_gate_up = true;
    if (keys.has_tensor("rope_factors_short.weight")) hp.rope_factors_tensor = "rope_factors_short.weight";
    if (keys.has_tensor("rope_factors_long.weight")) hp.rope_factors_long_tensor = "rope_factors_long.weight";
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.fused_gate_up = true;
    o.rope_factors = "rope_factors_short.weight";
    o.rope_factors_long = "rope_factors_long.weight";
    o.ffn_scales = false;  // llama.cpp's phi3 graph passes no scales to its feed-forward block
    declare_dense_tensors(hp, t, w, o);
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kPhi3{"phi3", read_hparams, declare_tensors, forward, reference::phi3};

}  // namespace cria::model::archs
