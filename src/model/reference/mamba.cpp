// mamba and mamba2 in float64, top to bottom: per layer x += mixer(rms_norm(x)
// · attn_norm) with the Mamba-1 or Mamba-2 mixer (reference/ssm.cpp), no
// attention, no feed-forward block; then the output head.

#include "model/reference/families.h"
#include "model/reference/ssm.h"

namespace cria::model::reference {
namespace {

Logits state_space_model(const Input& in, Rows (*mixer)(const Input&, uint32_t, const Rows&)) {
    const HParams& hp = in.hp;
    Rows x = embed(in, /*scale=*/false);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        Rows h(x.size());
        for (size_t t = 0; t < x.size(); ++t) h[t] = rms_norm(x[t], in.w.layers[l].attn_norm, hp.norm_rms_eps);
        const Rows y = mixer(in, l, h);
        for (size_t t = 0; t < x.size(); ++t) add_to(x[t], y[t]);
    }
    return output_head(in, x);
}

}  // namespace

Logits mamba(const Input& in) { return state_space_model(in, mamba_mixer); }
Logits mamba2(const Input& in) { return state_space_model(in, mamba2_mixer); }

}  // namespace cria::model::reference
