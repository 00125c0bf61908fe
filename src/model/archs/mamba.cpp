// mamba (Mamba-1): a state-space model. Every layer is x += mixer(rms_norm(x)),
// the Mamba-1 mixer (ssm_block.h) with its state per sequence in the
// recurrent memory; no attention, no feed-forward block, no positions.
// llama.cpp accepts only an inner width of twice the embedding width.

#include <string>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/ssm_block.h"
#include "model/ssm_tensors.h"

namespace cria::model::archs {
namespace {

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_ssm_hparams(keys, hp, SsmKind::Mamba1);
    if (hp.ssm_inner != 2 * hp.n_embd)
        keys.fail("'" + keys.key("ssm.inner_size") + "' must be twice the embedding width (llama.cpp supports only "
                  "an expansion factor of 2)");
    hp.recurrent_layers.assign(hp.n_layer, true);
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    t.lookup_matrix("token_embd.weight", hp.n_embd, hp.n_vocab, &w.token_embd);
    t.vector("output_norm.weight", hp.n_embd, &w.output_norm);
    t.linear("output", hp.n_embd, hp.n_vocab, &w.output, Need::Optional);  // absent: tied to token_embd
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        t.vector(layer_tensor(l, "attn_norm.weight"), hp.n_embd, &w.layers[l].attn_norm);
        declare_ssm_tensors(hp, t, w.layers[l], l, SsmKind::Mamba1);
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::embed(s, false);
    for (uint32_t l = s.layer_begin; l < s.layer_end; ++l) {
        blocks::capture(s, l);
        blocks::mamba_block(s, l);
    }
    blocks::capture(s, s.hp.n_layer);
    blocks::output_head(s, logits, hidden);
}

}  // namespace

extern const ArchDefinition kMamba{"mamba", read_hparams, declare_tensors, forward, reference::mamba,
                                   /*supports_experts=*/false, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
