// qwen3: qwen2 with an RMSNorm over each Q and K head before RoPE. A
// reranker's classification head (cls.output) is accepted and not used.

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys&, HParams& hp) {
    hp.rope_order = RopeOrder::NeoX;
    hp.has_qk_norm = true;
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.qk_norm = true;
    declare_dense_tensors(hp, t, w, o);
    t.ignored("cls.output.weight");
    t.ignored("cls.output.bias");
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::AttentionOptions attention;
    attention.qk_norm = true;
    blocks::dense_transformer(s, logits, hidden, false, attention, {});
}

}  // namespace

extern const ArchDefinition kQwen3{"qwen3", read_hparams, declare_tensors, forward, reference::llama};

}  // namespace cria::model::archs
