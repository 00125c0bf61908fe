// The gated delta rule of CpuOps (Ops::gated_delta_net): the recurrent form
// one task per value head, the chunked form one per key head and the value
// heads that read it; each head's d x d state stays in the core's cache
// while its tokens are processed.
//
// Recurrent form (one-token steps, and short batches): per token, u = M^T k
// (dot_rows: k held in registers against every column of M), the delta
// delta = beta (v - exp(g) u), each column M_j = exp(g) M_j + delta_j k, and
// o = scale M^T q.
//
// Chunked form (prompts), chunks of C = 32 tokens as llama.cpp's
// build_delta_net_chunking (which uses 64), without padding. With G_i the
// cumulative log decay inside the chunk and Gam_ij = exp(G_i - G_j) (never
// above 1):
//   N_ij = -beta_i (k_i . k_j) Gam_ij for j < i,  T = (I - N)^-1
//       (forward substitution on the C x C matrix)
//   U = T diag(beta) V,  W = T diag(beta exp(G)) K
//   Vn = U - W M                  (the deltas the recurrence would apply)
//   O_i = exp(G_i) M^T q~_i + sum_{j <= i} (q~_i . k_j) Gam_ij Vn_j,  q~ = scale q
//   M' = exp(G_C) M + sum_i exp(G_C - G_i) k_i Vn_i^T
// Everything is computed transposed, in the state's own layout S = M^T (row
// j = value j): U^T = V^T BU, W^T = K^T BW, X = S [Q~^T | W^T] (one product
// over the state for the outputs and the deltas; X_Q's column i then times
// exp(G_i)), Vn^T = U^T - X_W, O^T = X_Q + Vn^T P^T,
// S' = exp(G_C) S + Vn_end^T K, all through small_gemm (register tiles; V^T
// and K^T read as transposes for free); k.k and q~.k only on their lower
// triangle, and the products of the value heads that share a key head
// (K, Q~, their transposes and dot products) made once. The state is read twice and
// written once per chunk instead of per token; per token and head that is
// ~4.3 d^2 multiply-adds at near the core's FMA peak instead of ~3.5 d^2
// matrix-vector ones against a state streamed from memory. C = 32 beats 64
// here: the products inside the chunk grow with C, the state's with nothing.

#include <algorithm>
#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/recurrent_checks.h"
#include "ops/small_gemm.h"
#include "ops/transpose.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kChunk = 32;
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

// A chunk's working set. The first part is shared by the value heads of
// one key head (their k and q, the dot products among them, Q~^T), the rest
// is one value head's, reused by the next.
struct ChunkScratch {
    std::vector<float> K, Q;    // c x d token rows: k, q~ = scale * q
    std::vector<float> KT;      // d x kChunk: K^T (B of the dot products)
    std::vector<float> KK, QK;  // kChunk x kChunk: k_i . k_j (j < i), q~_i . k_j (j <= i)
    std::vector<float> XB;      // d x 2c: [Q~^T | W^T], the first half shared
    // Per token of the chunk: cumulative log decay, its exp, the factored
    // decays (see head_chunk) and the decay to the chunk's end.
    std::vector<float> G, expG, rel, inv_rel, to_end, P_row;
    std::vector<float> V;       // c x d token rows
    // kChunk x kChunk: N, then T = (I - N)^-1; B operands [j][i] of U^T and
    // W^T (T's columns times beta_j, beta_j exp(G_j)) and of the causal part
    // of O^T (P_ij).
    std::vector<float> N, T, BU, BW, PT;
    // d x c: U^T, then Vn^T in place; Vn^T with each token's decay to the
    // chunk's end (for the state). d x 2c: X = S [Q~^T | W^T], then O^T in
    // the first half. c x d: the outputs as rows.
    std::vector<float> VnT, VnT_end, X, O;
    explicit ChunkScratch(int64_t d) {
        const auto cd = static_cast<size_t>(kChunk * d), cc = static_cast<size_t>(kChunk * kChunk);
        for (std::vector<float>* v : {&G, &expG, &rel, &inv_rel, &to_end, &P_row}) v->resize(kChunk);
        for (std::vector<float>* v : {&K, &Q, &V, &KT, &VnT, &VnT_end, &O}) v->resize(cd);
        for (std::vector<float>* v : {&KK, &QK, &N, &T, &BU, &BW, &PT}) v->assign(cc, 0.0f);
        XB.resize(2 * cd);
        X.resize(2 * cd);
    }
};

// C = A B (accumulate: C += A B), row-major, strides in floats; A given as
// its transpose (k rows of m) when a_transposed.
void gemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
          int64_t k, bool accumulate = false, bool a_transposed = false) {
    small_gemm(SmallGemm{a, lda, b, ldb, c, ldc, m, n, k, accumulate, a_transposed});
}

// Column blocks of the products whose B is upper triangular ([j][i] zero for
// j > i, the causal products): block [i0, i0 + kTriBlock) needs only B's
// rows j < i0 + kTriBlock.
constexpr int64_t kTriBlock = 32;

// C (d x c) (+)= A B with B c x c upper triangular.
void gemm_upper_b(const float* a, int64_t lda, bool a_transposed, const float* b, float* c, int64_t ldc, int64_t d,
                  int64_t n_tok, bool accumulate) {
    for (int64_t i0 = 0; i0 < n_tok; i0 += kTriBlock) {
        const int64_t cols = std::min(kTriBlock, n_tok - i0);
        gemm(a, lda, b + i0, kChunk, c + i0, ldc, d, cols, i0 + cols, accumulate, a_transposed);
    }
}

// dst (rows x cols, ld_dst) = src^T (src: cols x rows, ld_src).
void transpose(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
    ops::transpose(Transpose{src, ld_src, dst, ld_dst, rows, cols});
}

// Asks for the rows of the chunk from token t0 (q, k, v to read, out to
// write) while this chunk computes: they are apart by the other heads' rows,
// so they mostly come from memory, and without this the copies wait for
// every line in turn (a sixth of the time, at a fraction of the bandwidth).
void prefetch_chunk(const HeadArgs* heads, int64_t n_heads, int64_t t0) {
    const HeadArgs& a = heads[0];
    const int64_t end = std::min(a.n_tokens, t0 + kChunk);
    const auto lines = [&](const float* row, bool write) {
        const char* p = reinterpret_cast<const char*>(row);
        for (int64_t b = 0; b < a.d * static_cast<int64_t>(sizeof(float)); b += 64) {
            if (write) {
                __builtin_prefetch(p + b, 1);
            } else {
                __builtin_prefetch(p + b, 0);
            }
        }
    };
    for (int64_t t = t0; t < end; ++t) {
        lines(token_row(*a.q, a.key_head, t), false);
        lines(token_row(*a.k, a.key_head, t), false);
        for (int64_t h = 0; h < n_heads; ++h) {
            lines(token_row(*heads[h].v, heads[h].head, t), false);
            lines(heads[h].out->row_f32(heads[h].head, t), true);
        }
    }
}

// One value head's part of the chunk of c tokens from t0, with the shared
// part of `s` filled in (K, Q, KT, KK, QK and XB's first half).
void head_chunk(const VecKernels& vk, const HeadArgs& a, ChunkScratch& s, int64_t t0, int64_t c) {
    const int64_t d = a.d, ldx = 2 * c;
    float* S = a.state;  // row j (value j) = the d key values of column j of M
    float cum = 0;
    for (int64_t i = 0; i < c; ++i) {
        cum += gate_at(*a.g, a.head, t0 + i);
        s.G[i] = cum;
        s.expG[i] = std::exp(cum);
        std::copy_n(token_row(*a.v, a.head, t0 + i), d, &s.V[i * d]);
    }
    // Gam_ij = exp(G_i - G_j) as rel_i * inv_rel_j (rel_i = exp(G_i - G_0)):
    // two exps per token instead of one per pair, while the chunk's decay
    // spans less than exp(-60) (so 1 / rel stays finite); otherwise one exp
    // per pair.
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
    // T = (I - N)^-1 with N_ij = -beta_i (k_i . k_j) Gam_ij (j < i), by
    // forward substitution: row i of T = e_i + sum_{j<i} N_ij T_j. Then
    // U = T diag(beta) V and W = T diag(beta exp(G)) K (the deltas' inputs
    // with the chunk's own updates applied), used transposed: B operands
    // BU[j][i] = T_ij beta_j, BW[j][i] = T_ij beta_j exp(G_j).
    for (int64_t i = 0; i < c; ++i) {
        float* Ni = &s.N[i * kChunk];
        std::copy_n(&s.KK[i * kChunk], i, Ni);
        decay_row(Ni, i, i, -gate_at(*a.beta, a.head, t0 + i));
        // Whole rows of kChunk (T_j is zero past j): whole vectors, the sum
        // kept in registers across the rows.
        float* Ti = &s.T[i * kChunk];
        std::fill_n(Ti, kChunk, 0.0f);
        Ti[i] = 1.0f;
        vk.weighted_rows(Ni, s.T.data(), kChunk * sizeof(float), i, Ti, kChunk);
    }
    transpose(s.T.data(), kChunk, s.BW.data(), kChunk, c, c);  // T^T, zero below the diagonal
    for (int64_t j = 0; j < c; ++j) {
        const float beta = gate_at(*a.beta, a.head, t0 + j);
        vk.scale(&s.BW[j * kChunk], beta, &s.BU[j * kChunk], c);
        vk.scale(&s.BW[j * kChunk], beta * s.expG[j], &s.BW[j * kChunk], c);
    }
    // U^T = V^T BU (into VnT), W^T = K^T BW (into XB's second half).
    gemm_upper_b(s.V.data(), d, true, s.BU.data(), s.VnT.data(), c, d, c, false);
    gemm_upper_b(s.K.data(), d, true, s.BW.data(), s.XB.data() + c, ldx, d, c, false);
    // X = S [Q~^T | W^T]: the state's part of the outputs and S W^T = (W M)^T,
    // in one product over the state at the chunk's start.
    gemm(S, d, s.XB.data(), ldx, s.X.data(), ldx, d, 2 * c, d);
    // Vn^T = U^T - (W M)^T: the deltas the recurrence would apply; Vn^T with
    // the decay from each token to the chunk's end; the state's part of
    // output i decayed by exp(G_i).
    const float G_last = s.G[c - 1];
    for (int64_t i = 0; i < c; ++i) s.to_end[i] = std::exp(G_last - s.G[i]);
    for (int64_t j = 0; j < d; ++j) {
        float* vn = &s.VnT[j * c];
        float* vn_end = &s.VnT_end[j * c];
        float* xq = &s.X[j * ldx];
        const float* mw = xq + c;
        for (int64_t i = 0; i < c; ++i) {
            vn[i] -= mw[i];
            vn_end[i] = vn[i] * s.to_end[i];
            xq[i] *= s.expG[i];
        }
    }
    // O^T = exp(G) * S Q~^T + Vn^T P^T with P_ij = (q~_i . k_j) Gam_ij (j <= i).
    for (int64_t i = 0; i < c; ++i) {
        float* p = s.P_row.data();
        std::copy_n(&s.QK[i * kChunk], i + 1, p);
        decay_row(p, i, i + 1, 1.0f);
        for (int64_t j = 0; j < c; ++j) s.PT[j * kChunk + i] = j <= i ? p[j] : 0.0f;
    }
    gemm_upper_b(s.VnT.data(), c, false, s.PT.data(), s.X.data(), ldx, d, c, true);
    transpose(s.X.data(), ldx, s.O.data(), d, c, d);
    for (int64_t i = 0; i < c; ++i) std::copy_n(&s.O[i * d], d, a.out->row_f32(a.head, t0 + i));
    // The state after the chunk: S = exp(G_C) S + Vn_end^T K, in one pass.
    small_gemm(SmallGemm{.a = s.VnT_end.data(), .lda = c, .b = s.K.data(), .ldb = d, .c = S, .ldc = d, .m = d,
                         .n = d, .k = c, .accumulate = true, .c_scale = s.expG[c - 1]});
}

// The chunked form for value heads that share one key head: per chunk, the
// key head's part once, then each value head's.
void chunked_heads(const VecKernels& vk, const HeadArgs* heads, int64_t n_heads) {
    const HeadArgs& a = heads[0];
    const int64_t d = a.d;
    ChunkScratch s(d);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kChunk) {
        const int64_t c = std::min(kChunk, a.n_tokens - t0);
        for (int64_t i = 0; i < c; ++i) {
            std::copy_n(token_row(*a.k, a.key_head, t0 + i), d, &s.K[i * d]);
            vk.scale(token_row(*a.q, a.key_head, t0 + i), a.scale, &s.Q[i * d], d);
        }
        prefetch_chunk(heads, n_heads, t0 + c);
        transpose(s.K.data(), d, s.KT.data(), kChunk, d, c);
        transpose(s.Q.data(), d, s.XB.data(), 2 * c, d, c);
        // k_i . k_j and q~_i . k_j for j <= i only: stripes of 16 rows
        // against the first columns up to the stripe's end.
        for (int64_t i0 = 0; i0 < c; i0 += 16) {
            const int64_t rows = std::min<int64_t>(16, c - i0), cols = i0 + rows;
            gemm(&s.K[i0 * d], d, s.KT.data(), kChunk, &s.KK[i0 * kChunk], kChunk, rows, cols, d);
            gemm(&s.Q[i0 * d], d, s.KT.data(), kChunk, &s.QK[i0 * kChunk], kChunk, rows, cols, d);
        }
        for (int64_t h = 0; h < n_heads; ++h) head_chunk(vk, heads[h], s, t0, c);
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
    const bool tiled = params.head_map == DeltaHeadMap::Tiled;
    const auto head_args = [&](int64_t h) {
        return HeadArgs{&q, &k, &v, &g, &beta, &out, state.row_f32(h), h, tiled ? h % n_k_heads : h / group,
                        n_tokens, d, params.scale};
    };
    if (!chunked) {
        pool_.parallel_for(n_v_heads, [&](int64_t h, int) { recurrent_head(vk, head_args(h)); }, 1);
        return;
    }
    // Chunked: one task per key head and its value heads (their k and q
    // products computed once), split further only when there are fewer key
    // heads than threads.
    const int64_t parts = std::clamp<int64_t>((pool_.size() + n_k_heads - 1) / n_k_heads, 1, group);
    const int64_t per_part = (group + parts - 1) / parts;
    pool_.parallel_for(
        n_k_heads * parts,
        [&](int64_t task, int) {
            const int64_t kh = task / parts, part = task % parts;
            std::vector<HeadArgs> heads;
            for (int64_t r = part * per_part; r < std::min(group, (part + 1) * per_part); ++r)
                heads.push_back(head_args(tiled ? kh + r * n_k_heads : kh * group + r));
            if (!heads.empty()) chunked_heads(vk, heads.data(), static_cast<int64_t>(heads.size()));
        },
        1);
}

}  // namespace cria::ops
