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
// token, and the rest is products inside the chunk.

#include <algorithm>
#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/recurrent_checks.h"
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
        for (int64_t j = 0; j < d; ++j) {
            float* col = M + j * d;
            vk.scale(col, decay, col, d);
            vk.axpy(delta[j], k, col, d);
        }
        float* o = a.out->row_f32(a.head, t);
        vk.dot_rows(q, M, col_bytes, d, o, d);
        vk.scale(o, a.scale, o, d);
    }
}

struct ChunkScratch {
    std::vector<float> G, expG, L, K, Q, U, W, Vn, VnT, row;
    explicit ChunkScratch(int64_t d) {
        const auto cd = static_cast<size_t>(kChunk * d);
        G.resize(kChunk);
        expG.resize(kChunk);
        L.resize(static_cast<size_t>(kChunk * kChunk));
        K.resize(cd);
        Q.resize(cd);
        U.resize(cd);
        W.resize(cd);
        Vn.resize(cd);
        VnT.resize(cd);
        row.resize(static_cast<size_t>(std::max<int64_t>(d, kChunk)));
    }
};

void chunked_head(const VecKernels& vk, const HeadArgs& a) {
    const int64_t d = a.d;
    const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
    float* M = a.state;
    ChunkScratch s(d);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kChunk) {
        const int64_t c = std::min(kChunk, a.n_tokens - t0);
        float cum = 0;
        for (int64_t i = 0; i < c; ++i) {
            cum += gate_at(*a.g, a.head, t0 + i);
            s.G[i] = cum;
            s.expG[i] = std::exp(cum);
            std::copy_n(token_row(*a.k, a.key_head, t0 + i), d, &s.K[i * d]);
            vk.scale(token_row(*a.q, a.key_head, t0 + i), a.scale, &s.Q[i * d], d);
        }
        // L (strictly lower) and the two forward substitutions.
        for (int64_t i = 0; i < c; ++i) {
            const float beta = gate_at(*a.beta, a.head, t0 + i);
            float* Li = &s.L[i * kChunk];
            vk.dot_rows(&s.K[i * d], s.K.data(), row_bytes, i, Li, d);
            for (int64_t j = 0; j < i; ++j) Li[j] = -beta * Li[j] * std::exp(s.G[i] - s.G[j]);
            vk.scale(token_row(*a.v, a.head, t0 + i), beta, &s.U[i * d], d);
            vk.scale(&s.K[i * d], beta * s.expG[i], &s.W[i * d], d);
            vk.weighted_rows(Li, s.U.data(), row_bytes, i, &s.U[i * d], d);
            vk.weighted_rows(Li, s.W.data(), row_bytes, i, &s.W[i * d], d);
        }
        // Vn = U - W M; outputs from the state at the chunk's start.
        for (int64_t i = 0; i < c; ++i) {
            float* vn = &s.Vn[i * d];
            vk.dot_rows(&s.W[i * d], M, row_bytes, d, vn, d);
            const float* u = &s.U[i * d];
            for (int64_t j = 0; j < d; ++j) vn[j] = u[j] - vn[j];
        }
        for (int64_t i = 0; i < c; ++i) {
            float* o = a.out->row_f32(a.head, t0 + i);
            vk.dot_rows(&s.Q[i * d], M, row_bytes, d, o, d);
            vk.scale(o, s.expG[i], o, d);
            float* p = s.row.data();
            vk.dot_rows(&s.Q[i * d], s.K.data(), row_bytes, i + 1, p, d);
            for (int64_t j = 0; j <= i; ++j) p[j] *= std::exp(s.G[i] - s.G[j]);
            vk.weighted_rows(p, s.Vn.data(), row_bytes, i + 1, o, d);
        }
        // The state after the chunk.
        const float G_last = s.G[c - 1];
        for (int64_t i = 0; i < c; ++i) {
            vk.scale(&s.K[i * d], std::exp(G_last - s.G[i]), &s.K[i * d], d);
            for (int64_t j = 0; j < d; ++j) s.VnT[j * kChunk + i] = s.Vn[i * d + j];
        }
        const float decay = s.expG[c - 1];
        for (int64_t j = 0; j < d; ++j) {
            float* col = M + j * d;
            vk.scale(col, decay, col, d);
            vk.weighted_rows(&s.VnT[j * kChunk], s.K.data(), row_bytes, c, col, d);
        }
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
