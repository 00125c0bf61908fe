// deepseek2 in float64, top to bottom. Multi-head latent attention is
// written as the plain multi-head attention it is mathematically: every
// head's key [k_nope | k_pe] and value decompressed from the token's latent
// (per head by attn_k_b / attn_v_b, or by the older attn_kv_b), the roped
// key part shared by all heads. The fast path's absorbed form (attention
// over the latent, queries through k_b, outputs through v_b) must land on
// the same numbers, so this is an independent check of it.

#include <optional>

#include "model/reference/families.h"

namespace cria::model::reference {
namespace {

// Matrix h of a stack [cols, rows, n] (k_b / v_b), dequantised.
Matrix stack_part(const ops::TensorView& stack, int64_t h) {
    return Matrix(ops::TensorView::contiguous(stack.type, stack.row(0, h), {stack.ne[0], stack.ne[1]}));
}

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

    Rows q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
        const Vec h = rms_norm(x[t], lw.attn_norm, eps);
        Vec qt = low_rank_q ? wq * rms_norm(*wq_a * h, lw.q_a_norm, eps) : wq * h;
        const Vec kv = wkv_a * h;
        const Vec c = rms_norm(slice(kv, 0, r), lw.kv_a_norm, eps);
        Vec k_pe = slice(kv, r, rot);
        rope(k_pe, rot, static_cast<int64_t>(t), rope_params);

        k[t].assign(static_cast<size_t>(H) * dqk, 0.0);
        v[t].assign(static_cast<size_t>(H) * dv, 0.0);
        const Vec kvb = plain ? *wkv_b * c : Vec{};
        for (uint32_t hd = 0; hd < H; ++hd) {
            // The roped part of the query: the last rot values of the head.
            Vec q_pe = slice(qt, static_cast<uint64_t>(hd) * dqk + nope, rot);
            rope(q_pe, rot, static_cast<int64_t>(t), rope_params);
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
    return attention(mha, layer, q, k, v);
}

}  // namespace

Logits deepseek2(const Input& in) {
    const HParams& hp = in.hp;
    const double eps = hp.norm_rms_eps;
    const size_t n = in.tokens.size();
    Rows x = embed(in, /*scale=*/false);

    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& lw = in.w.layers[l];
        const Rows attn = latent_attention(in, l, x);
        const Linear wo(lw.wo);
        for (size_t t = 0; t < n; ++t) add_to(x[t], wo(attn[t]));

        if (hp.is_moe(l)) {  // the routed experts plus the shared expert (MoeFfn adds it)
            const MoeFfn moe(hp, lw);
            for (size_t t = 0; t < n; ++t) add_to(x[t], moe(rms_norm(x[t], lw.ffn_norm, eps)));
            continue;
        }
        const Linear gate(lw.gate), up(lw.up), down(lw.down);
        for (size_t t = 0; t < n; ++t) {
            const Vec h = rms_norm(x[t], lw.ffn_norm, eps);
            Vec g = gate(h);
            const Vec u = up(h);
            for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
            add_to(x[t], down(g));
        }
    }
    return output_head(in, x);
}

}  // namespace cria::model::reference
