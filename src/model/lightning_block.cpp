#include "model/lightning_block.h"

#include <cmath>
#include <string>

#include "cria/core/error.h"
#include "model/sequence_runs.h"

namespace cria::model::blocks {
namespace {

using ops::TensorView;

// Part `part` (0 q, 1 k, 2 v) of tokens [first, first + m) of the
// [3 d, H, n] projection: rows of d, 3 d apart.
TensorView qkv_part(std::vector<float>& qkv, int64_t d, int64_t n_head, int part, int64_t first, int64_t m) {
    TensorView t = TensorView::contiguous(ElementType::F32, qkv.data() + first * 3 * d * n_head + part * d,
                                          {d, n_head, m});
    t.nb[1] = static_cast<size_t>(3 * d) * sizeof(float);
    t.nb[2] = t.nb[1] * static_cast<size_t>(n_head);
    t.nb[3] = t.nb[2] * static_cast<size_t>(m);
    return t;
}

}  // namespace

std::vector<float> lightning_decay_rates(const HParams& hp, uint32_t layer) {
    if (hp.n_layer < 2)
        throw Error("lightning attention: the decay of a layer needs at least 2 layers (it scales by 1 - layer / (" +
                    std::to_string(hp.n_layer) + " - 1))");
    // llama.cpp: start = 2^(-2^(-(log2 H - 3))), slope_h = start^(h + 1),
    // in float; the layer's factor in double, then scaled as a float.
    const float start = std::pow(2.0f, -std::pow(2.0f, -(std::log2(static_cast<float>(hp.n_head)) - 3.0f)));
    const auto layer_factor = static_cast<float>(1.0 - 1.0 * layer / (hp.n_layer - 1) + 1e-5);
    std::vector<float> rates(hp.n_head);
    for (uint32_t h = 0; h < hp.n_head; ++h) rates[h] = start * std::pow(start, static_cast<float>(h)) * layer_factor;
    return rates;
}

uint32_t lightning_state_floats(const HParams& hp) { return hp.head_dim * hp.head_dim * hp.n_head; }

void lightning_mixer(Step& s, uint32_t layer) {
    const HParams& hp = s.hp;
    const LayerWeights& lw = s.w.layers[layer];
    Workspace& ws = s.ws;
    const int64_t n = s.n, d = hp.head_dim, H = hp.n_head, width = d * H;

    const TensorView h = view(ws.h, hp.n_embd, n);
    const TensorView qkv = view(ws.qkv, 3 * width, n);
    linear(s, lw.wqkv, h, qkv);
    s.ops.silu(qkv, qkv);

    ops::LightningParams p;
    const std::vector<float> rates = lightning_decay_rates(hp, layer);
    p.rates = rates.data();
    const TensorView o = view(ws.attn, width, n);
    for (const SequenceRun& r : sequence_runs(s.in)) {
        float* state = s.memory.recurrent_state(layer, r.seq).ssm;
        const TensorView st = TensorView::contiguous(ElementType::F32, state, {d * d, H});
        const auto run = [&](int64_t first, int64_t m) {
            s.ops.lightning_attention(qkv_part(ws.qkv, d, H, 0, first, m), qkv_part(ws.qkv, d, H, 1, first, m),
                                      qkv_part(ws.qkv, d, H, 2, first, m), st, p,
                                      TensorView::contiguous(ElementType::F32, ws.attn.data() + first * width, {d, H, m}));
        };
        if (!s.memory.keeps_every_position(layer, r.seq)) {
            run(r.first, r.n);
            continue;
        }
        for (int64_t t = 0; t < r.n; ++t) {
            run(r.first + t, 1);
            s.memory.record_position(layer, r.seq, s.in.positions[r.first + t]);
        }
    }

    // One RMSNorm over all heads together, then the output gate.
    s.ops.rms_norm(o, lw.post_attn_norm.data(), hp.norm_rms_eps, o);
    const TensorView g = view(ws.q, width, n);
    linear(s, lw.attn_gate, h, g);
    for (int64_t i = 0; i < width * n; ++i) ws.q[static_cast<size_t>(i)] = 1.0f / (1.0f + std::exp(-ws.q[static_cast<size_t>(i)]));
    s.ops.mul(o, g, o);
    linear(s, lw.wo, o, view(ws.o, hp.n_embd, n));
}

}  // namespace cria::model::blocks
