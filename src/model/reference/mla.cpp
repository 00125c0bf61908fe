// Multi-head latent attention in float64 (deepseek2, kimi-linear,
// bailingmoe3), written as the plain multi-head attention it is
// mathematically: every head's key [k_nope | k_pe] and value decompressed
// from the token's latent (per head by attn_k_b / attn_v_b, or by the older
// attn_kv_b), the key part k_pe shared by all heads (roped, except on the
// layers hp.nope_layers marks). The fast path's absorbed form (attention
// over the latent, queries through k_b, outputs through v_b) must land on
// the same numbers, so this is an independent check of it.

#include "model/reference/mla.h"

#include <cmath>
#include <optional>

namespace cria::model::reference {
namespace {

// Matrix h of a stack [cols, rows, n] (k_b / v_b), dequantised.
Matrix stack_part(const ops::TensorView& stack, int64_t h) {
    return Matrix(ops::TensorView::contiguous(stack.type, stack.row(0, h), {stack.ne[0], stack.ne[1]}));
}

}  // namespace

// The attention of one layer before attn_output: per position the heads'
// values, H * head_dim_v_mla of them.
Rows latent_attention(const Input& in, uint32_t layer, const Rows& x) {
    const HParams& hp = in.hp;
    const LayerWeights& lw = in.w.layers[layer];
    const double eps = hp.norm_rms_eps;
    const uint32_t H = hp.n_head, r = hp.n_lora_kv, rot = hp.n_rot;
    const uint32_t dqk = hp.head_dim_mla, dv = hp.head_dim_v_mla, nope = dqk - rot;
    const Rope rope_params = layer_rope(in, layer);
    const size_t n = x.size();

    const bool low_rank_q = !lw.wq.present(), plain = !hp.mla_absorbed;
    const auto matrix_if = [](bool present, const ops::TensorView& w) {
        return present ? std::optional<Matrix>(std::in_place, w) : std::nullopt;
    };
    const Matrix wq(low_rank_q ? lw.wq_b.w : lw.wq.w);
    const std::optional<Matrix> wq_a = matrix_if(low_rank_q, lw.wq_a.w);
    const Matrix wkv_a(lw.wkv_a_mqa.w);
    const std::optional<Matrix> wkv_b = matrix_if(plain, lw.wkv_b.w);
    std::vector<Matrix> k_b, v_b;  // per head: k_b [nope, r], v_b [r, dv]
    if (!plain)
        for (uint32_t h = 0; h < H; ++h) {
            k_b.push_back(stack_part(lw.k_b, h));
            v_b.push_back(stack_part(lw.v_b, h));
        }

    const bool roped = hp.uses_rope(layer);
    Rows q(n), k(n), v(n), gate(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec h = rms_norm(x[t], lw.attn_norm, eps);
        if (lw.attn_gate.present()) gate[t] = Linear(lw.attn_gate)(h);
        Vec qt = low_rank_q ? wq * rms_norm(*wq_a * h, lw.q_a_norm, eps) : wq * h;
        const Vec kv = wkv_a * h;
        const Vec c = rms_norm(slice(kv, 0, r), lw.kv_a_norm, eps);
        Vec k_pe = slice(kv, r, rot);
        if (roped) rope(k_pe, rot, static_cast<int64_t>(t), rope_params);

        k[t].assign(static_cast<size_t>(H) * dqk, 0.0);
        v[t].assign(static_cast<size_t>(H) * dv, 0.0);
        const Vec kvb = plain ? *wkv_b * c : Vec{};
        for (uint32_t hd = 0; hd < H; ++hd) {
            // The roped part of the query: the last rot values of the head.
            Vec q_pe = slice(qt, static_cast<uint64_t>(hd) * dqk + nope, rot);
            if (roped) rope(q_pe, rot, static_cast<int64_t>(t), rope_params);
            for (uint32_t i = 0; i < rot; ++i) qt[hd * dqk + nope + i] = q_pe[i];
            double* kh = &k[t][hd * dqk];
            double* vh = &v[t][hd * dv];
            if (plain) {  // attn_kv_b: per head [k_nope (nope) | v (dv)]
                for (uint32_t d = 0; d < nope; ++d) kh[d] = kvb[hd * (nope + dv) + d];
                for (uint32_t j = 0; j < dv; ++j) vh[j] = kvb[hd * (nope + dv) + nope + j];
            } else {
                // k_b[d, r', h] (ne0 = nope): k_nope[d] = sum_r' k_b[d, r'] c[r'];
                // v_b[r', j, h] (ne0 = r): v[j] = sum_r' v_b[r', j] c[r'].
                const Matrix& kb = k_b[hd];
                for (uint32_t d = 0; d < nope; ++d) {
                    double sum = 0;
                    for (uint32_t i = 0; i < r; ++i) sum += kb.values[static_cast<size_t>(i) * nope + d] * c[i];
                    kh[d] = sum;
                }
                const Vec vv = v_b[hd] * c;
                for (uint32_t j = 0; j < dv; ++j) vh[j] = vv[j];
            }
            for (uint32_t i = 0; i < rot; ++i) kh[nope + i] = k_pe[i];
        }
        q[t] = std::move(qt);
    }
    // Plain multi-head attention over the decompressed heads.
    HParams mha = hp;
    mha.head_dim = dqk;
    mha.head_dim_v = dv;
    mha.n_head_kv = H;
    Rows out = attention(mha, layer, q, k, v);
    // The output gate: sigmoid(attn_gate h) per head or per value channel.
    if (lw.attn_gate.present())
        for (size_t t = 0; t < n; ++t) {
            const size_t per = out[t].size() / gate[t].size();
            for (size_t i = 0; i < out[t].size(); ++i) out[t][i] /= 1.0 + std::exp(-gate[t][i / per]);
        }
    return out;
}


}  // namespace cria::model::reference
