// The gated delta rule of CpuOps (Ops::gated_delta_net), one task per value
// head: each head's d x d state stays in the core's cache while its tokens
// are processed.
//
// Recurrent form (one-token steps, and short batches): per token, u = M^T k
// (dot_rows: k held in registers against every column of M), the delta
// delta = beta (v - exp(g) u), each column M_j = exp(g) M_j + delta_j k, and
// o = scale M^T q.
//
// Chunked form (prompts), chunks of C = 64 tokens as llama.cpp's
// build_delta_net_chunking, without padding. With G_i the cumulative log
// decay inside the chunk and Gam_ij = exp(G_i - G_j) (never above 1):
//   L_ij = beta_i (k_i . k_j) Gam_ij for j < i
//   U = (I + L)^-1 diag(beta) V,  W = (I + L)^-1 diag(beta exp(G)) K
//       (forward substitution, row by row)
//   Vn = U - W M                  (the deltas the recurrence would apply)
//   O_i = exp(G_i) M^T q~_i + sum_{j <= i} (q~_i . k_j) Gam_ij Vn_j,  q~ = scale q
//   M' = exp(G_C) M + sum_i exp(G_C - G_i) k_i Vn_i^T
// The state is streamed three times per chunk instead of three times per
// token, and the rest is products inside the chunk (small_gemm: register
// tiles of C, B's rows against broadcast values of A, so the state is used
// transposed).

#include <algorithm>
#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/recurrent_checks.h"
#include "ops/small_gemm.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kChunk = 64;
// Below this many tokens the chunk's set-up costs more than it saves.
constexpr int64_t kChunkedFrom = 8;

struct HeadArgs {
    const TensorView *q, *k, *v, *g, *beta, *out;
    float* state;
    int64_t head, key_head, n_tokens, d;
    float scale;
};

const float* token_row(const TensorView& t, int64_t head, int64_t token) { return t.row_f32(head, token); }
float gate_at(const TensorView& t, int64_t head, int64_t token) { return t.row_f32(token)[head]; }

void recurrent_head(const VecKernels& vk, const HeadArgs& a) {
    const int64_t d = a.d;
    const size_t col_bytes = static_cast<size_t>(d) * sizeof(float);
    float* M = a.state;
    std::vector<float> delta(static_cast<size_t>(d));
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const float* q = token_row(*a.q, a.key_head, t);
        const float* k = token_row(*a.k, a.key_head, t);
        const float* v = token_row(*a.v, a.head, t);
        const float decay = std::exp(gate_at(*a.g, a.head, t));
        const float beta = gate_at(*a.beta, a.head, t);
        vk.dot_rows(k, M, col_bytes, d, delta.data(), d);  // u = M^T k
        for (int64_t j = 0; j < d; ++j) delta[j] = beta * (v[j] - decay * delta[j]);
        vk.scale(M, decay, M, d * d);
        for (int64_t j = 0; j < d; ++j) vk.axpy(delta[j], k, M + j * d, d);
        float* o = a.out->row_f32(a.head, t);
        vk.dot_rows(q, M, col_bytes, d, o, d);
        vk.scale(o, a.scale, o, d);
    }
}

struct ChunkScratch {
    std::vector<float> G, expG, rel, inv_rel, KQ, KT, AP, UW, Vn, VnT, MT, MW, MQ;
    explicit ChunkScratch(int64_t d) {
        const auto cd = static_cast<size_t>(kChunk * d);
        for (std::vector<float>* v : {&G, &expG, &rel, &inv_rel}) v->resize(kChunk);
        KQ.resize(2 * cd);
        AP.resize(static_cast<size_t>(2 * kChunk * kChunk));
        UW.resize(2 * cd);
        for (std::vector<float>* v : {&KT, &Vn, &VnT, &MW, &MQ}) v->resize(cd);
        MT.resize(static_cast<size_t>(d * d));
    }
};

// C = A B (accumulate: C += A B), row-major, strides in floats.
void gemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
          int64_t k, bool accumulate = false) {
    small_gemm(SmallGemm{a, lda, b, ldb, c, ldc, m, n, k, accumulate});
}

void chunked_head(const VecKernels& vk, const HeadArgs& a) {
    const int64_t d = a.d;
    float* M = a.state;  // column j (value j) = the d key values at M + j * d
    ChunkScratch s(d);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kChunk) {
        const int64_t c = std::min(kChunk, a.n_tokens - t0);
        float* K = s.KQ.data();      // c rows of d
        float* Q = K + c * d;        // c rows of d, times the scale
        float cum = 0;
        for (int64_t i = 0; i < c; ++i) {
            cum += gate_at(*a.g, a.head, t0 + i);
            s.G[i] = cum;
            s.expG[i] = std::exp(cum);
            std::copy_n(token_row(*a.k, a.key_head, t0 + i), d, K + i * d);
            vk.scale(token_row(*a.q, a.key_head, t0 + i), a.scale, Q + i * d, d);
        }
        // Gam_ij = exp(G_i - G_j) as rel_i * inv_rel_j (rel_i = exp(G_i - G_0)):
        // two exps per token instead of one per pair, while the chunk's
        // decay spans less than exp(-60) (so 1 / rel stays finite);
        // otherwise one exp per pair.
        const bool factored = s.G[0] - s.G[c - 1] < 60.0f;
        if (factored)
            for (int64_t i = 0; i < c; ++i) {
                s.rel[i] = std::exp(s.G[i] - s.G[0]);
                s.inv_rel[i] = 1.0f / s.rel[i];
            }
        // row[j] *= f * Gam_ij for j < n.
        const auto decay_row = [&](float* row, int64_t i, int64_t n, float f) {
            if (factored) {
                const float fi = f * s.rel[i];
                for (int64_t j = 0; j < n; ++j) row[j] *= fi * s.inv_rel[j];
            } else {
                for (int64_t j = 0; j < n; ++j) row[j] *= f * std::exp(s.G[i] - s.G[j]);
            }
        };
        // k_i . k_j (rows 0..c-1 of AP) and q~_i . k_j (rows c..2c-1), in one product.
        for (int64_t i = 0; i < c; ++i)
            for (int64_t f = 0; f < d; ++f) s.KT[f * kChunk + i] = K[i * d + f];
        gemm(s.KQ.data(), d, s.KT.data(), kChunk, s.AP.data(), c, 2 * c, c, d);
        // [U | W] rows: [beta_i v_i | beta_i exp(G_i) k_i], then (I + L)^-1 by
        // forward substitution, L_ij = beta_i (k_i . k_j) Gam_ij (j < i).
        const size_t uw_bytes = static_cast<size_t>(2 * d) * sizeof(float);
        for (int64_t i = 0; i < c; ++i) {
            const float beta = gate_at(*a.beta, a.head, t0 + i);
            float* Li = &s.AP[i * c];
            decay_row(Li, i, i, -beta);
            float* uw = &s.UW[i * 2 * d];
            vk.scale(token_row(*a.v, a.head, t0 + i), beta, uw, d);
            vk.scale(K + i * d, beta * s.expG[i], uw + d, d);
            vk.weighted_rows(Li, s.UW.data(), uw_bytes, i, uw, 2 * d);
        }
        // Vn = U - W M and M^T q~ of every token, from the state at the chunk's start.
        for (int64_t j = 0; j < d; ++j)
            for (int64_t f = 0; f < d; ++f) s.MT[f * d + j] = M[j * d + f];
        gemm(s.UW.data() + d, 2 * d, s.MT.data(), d, s.MW.data(), d, c, d, d);
        gemm(Q, d, s.MT.data(), d, s.MQ.data(), d, c, d, d);
        for (int64_t i = 0; i < c; ++i) {
            float* vn = &s.Vn[i * d];
            const float* u = &s.UW[i * 2 * d];
            const float* mw = &s.MW[i * d];
            for (int64_t j = 0; j < d; ++j) vn[j] = u[j] - mw[j];
        }
        // O_i = exp(G_i) M^T q~_i + sum_{j <= i} (q~_i . k_j) Gam_ij Vn_j.
        const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
        for (int64_t i = 0; i < c; ++i) {
            float* o = a.out->row_f32(a.head, t0 + i);
            vk.scale(&s.MQ[i * d], s.expG[i], o, d);
            float* p = &s.AP[(c + i) * c];
            decay_row(p, i, i + 1, 1.0f);
            vk.weighted_rows(p, s.Vn.data(), row_bytes, i + 1, o, d);
        }
        // The state after the chunk: M_j = exp(G_C) M_j + sum_i Vn_i[j] exp(G_C - G_i) k_i.
        const float G_last = s.G[c - 1];
        for (int64_t i = 0; i < c; ++i) {
            vk.scale(K + i * d, std::exp(G_last - s.G[i]), K + i * d, d);
            for (int64_t j = 0; j < d; ++j) s.VnT[j * kChunk + i] = s.Vn[i * d + j];
        }
        vk.scale(M, s.expG[c - 1], M, d * d);
        gemm(s.VnT.data(), kChunk, K, d, M, d, d, d, c, /*accumulate=*/true);
    }
}

}  // namespace

void CpuOps::gated_delta_net(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                             const TensorView& beta, const TensorView& state, const GatedDeltaParams& params,
                             const TensorView& out) {
    check_gated_delta_net(q, k, v, g, beta, state, out);
    const int64_t d = v.ne[0], n_v_heads = v.ne[1], n_k_heads = q.ne[1], n_tokens = v.ne[2];
    if (n_tokens == 0) return;
    const bool chunked = params.form == DeltaForm::Chunked ||
                         (params.form == DeltaForm::Auto && n_tokens >= kChunkedFrom);
    const VecKernels& vk = vec_kernels();
    const int64_t group = n_v_heads / n_k_heads;
    pool_.parallel_for(
        n_v_heads,
        [&](int64_t h, int) {
            HeadArgs a{&q, &k, &v, &g, &beta, &out, state.row_f32(h), h,
                       params.head_map == DeltaHeadMap::Tiled ? h % n_k_heads : h / group, n_tokens, d, params.scale};
            if (chunked) {
                chunked_head(vk, a);
            } else {
                recurrent_head(vk, a);
            }
        },
        1);
}

}  // namespace cria::ops
