// jamba: a hybrid of attention and Mamba-1 layers. A layer with
// head_count_kv 0 is recurrent (the Mamba-1 mixer with RMS norms of dt, B
// and C, each with its weight); the others attend without any positional
// encoding. Every layer then has a SwiGLU feed-forward block (its `.scale`
// tensors unused, as llama.cpp's jamba graph passes none). llama.cpp accepts
// only an inner width of twice the embedding width. Jamba with experts (a
// router on some layers) is refused for now.

#include <algorithm>
#include <string>
#include <vector>

#include "model/arch.h"
#include "model/blocks.h"
#include "model/dense_tensors.h"
#include "model/hparams_keys.h"
#include "model/reference/families.h"
#include "model/ssm_tensors.h"

namespace cria::model::archs {
namespace {

// Recurrent iff head_count_kv of the layer is 0 (llama.cpp's is_recr for jamba,
// granitehybrid, lfm2). A scalar head_count_kv means no recurrent layer.
std::vector<bool> layers_without_kv_heads(const HParamsKeys& keys, uint32_t n_layer) {
    const std::vector<uint32_t> kv = keys.u32_per_layer("attention.head_count_kv", n_layer);
    std::vector<bool> recurrent(n_layer, false);
    for (uint32_t l = 0; l < kv.size(); ++l) recurrent[l] = kv[l] == 0;
    return recurrent;
}

void read_hparams(const HParamsKeys& keys, HParams& hp) {
    read_ssm_hparams(keys, hp, SsmKind::Mamba1);
    if (hp.ssm_inner != 2 * hp.n_embd)
        keys.fail("'" + keys.key("ssm.inner_size") + "' must be twice the embedding width (llama.cpp supports only "
                  "an expansion factor of 2)");
    hp.recurrent_layers = layers_without_kv_heads(keys, hp.n_layer);
    if (hp.n_ff == 0) keys.fail("'" + keys.key("feed_forward_length") + "' must be positive");
    if (hp.n_head == 0 && !std::all_of(hp.recurrent_layers.begin(), hp.recurrent_layers.end(), [](bool r) { return r; }))
        keys.fail("the attention layers need '" + keys.key("attention.head_count") + "'");
    hp.nope_layers.assign(hp.n_layer, true);  // no RoPE: attention sees no positions
}

void declare_tensors(const HParams& hp, TensorTable& t, Weights& w) {
    DenseTensorOptions o;
    o.ffn_scales = false;
    o.attn_output_bias = false;  // llama.cpp loads none: the output projection has no bias
    declare_dense_tensors(hp, t, w, o);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        if (!hp.is_recurrent(l)) continue;
        declare_ssm_tensors(hp, t, w.layers[l], l, SsmKind::Mamba1);
        SsmWeights& s = w.layers[l].ssm;
        t.vector(layer_tensor(l, "ssm_dt_norm.weight"), hp.ssm_dt_rank, &s.dt_norm);
        t.vector(layer_tensor(l, "ssm_b_norm.weight"), hp.ssm_state, &s.b_norm);
        t.vector(layer_tensor(l, "ssm_c_norm.weight"), hp.ssm_state, &s.c_norm);
    }
}

void forward(blocks::Step& s, float* logits, float* hidden) {
    blocks::dense_transformer(s, logits, hidden, false, {}, {});
}

}  // namespace

extern const ArchDefinition kJamba{"jamba", read_hparams, declare_tensors, forward, reference::llama,
                                   /*supports_experts=*/false, /*has_recurrent_layers=*/true};

}  // namespace cria::model::archs
