#include "model/relu2_ffn.h"

namespace cria::model::blocks {

void relu2_ffn_block(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, F = lw.up.n_out();
    const ops::TensorView x = view(ws.x, hp.n_embd, n), h = view(ws.h, hp.n_embd, n);
    s.ops.rms_norm(x, lw.attn_norm.data(), hp.norm_rms_eps, h);
    const ops::TensorView u = view(ws.up, F, n);
    linear(s, lw.up, h, u);
    // relu(u)² = relu(u) · u: zero where u <= 0, u² elsewhere (ggml's relu then sqr).
    for (int64_t i = 0; i < F * n; ++i) {
        const float v = ws.up[static_cast<size_t>(i)];
        ws.up[static_cast<size_t>(i)] = v > 0.0f ? v * v : 0.0f;
    }
    const ops::TensorView o = view(ws.o, hp.n_embd, n);
    linear(s, lw.down, u, o);
    s.ops.add(x, o, x);
}

}  // namespace cria::model::blocks
