// Kimi delta attention of CpuOps (Ops::kimi_delta_attention): the delta rule
// with one decay per key channel, one task per value head (each head's d x d
// state stays in the core's cache while its tokens are processed).
//
// Recurrent form (one-token steps, short batches): per token and per value
// column M_j (the d key values of value j, contiguous): M_j *= exp(g),
// u_j = M_j . k, delta_j = beta (v_j - u_j), M_j += delta_j k,
// o_j = scale M_j . q: one pass over the state per token, each column in L1
// for its four uses.
//
// Chunked form (prompts), chunks of C = 16 tokens as llama.cpp's KDA
// chunking. With G_i the cumulative log decay inside the chunk (a vector
// over key channels) and A_i = exp(G_i):
//   L_ij = beta_i sum_f k_i[f] k_j[f] exp(G_i[f] - G_j[f])    (j < i)
//   P_ij = scale sum_f q_i[f] k_j[f] exp(G_i[f] - G_j[f])      (j <= i)
//   U = (I + L)^-1 diag(beta) V,  W = (I + L)^-1 diag(beta) (A ⊙ K)
//   Vn = U - W M                  (the deltas the recurrence would apply)
//   O_i = scale M^T (A_i ⊙ q_i) + sum_{j <= i} P_ij Vn_j
//   M' = diag(A_C) M + sum_j (k_j ⊙ exp(G_C - G_j)) Vn_j^T
// The pairwise decays factor as exp(G_i - G_0) exp(G_0 - G_j), so L and P
// are two products of whole chunks (and every decay of the chunk comes from
// two exps per channel and token); the second factor grows with the
// chunk's decay, so a chunk whose decay spans more than exp(-80) in some
// channel (where it would leave float's range) runs the recurrent form
// instead. The products run transposed, in the state's own layout (row j =
// value j), as the gated delta rule's chunks (gated_delta_net.cpp): the
// state is read by one product per chunk and updated by another, and no
// transpose of it is made. Both forms are exact reformulations of ops.h's
// recurrence.

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

constexpr int64_t kChunk = 16;
// Below this many tokens the chunk's set-up costs more than it saves.
constexpr int64_t kChunkedFrom = 8;
// The largest decay span (in log units, per channel) a chunk may have for
// the factored pairwise decays: exp(80) ~ 5.5e34 stays finite and exp(-80)
// a normal float.
constexpr float kMaxFactoredSpan = 80.0f;

struct HeadArgs {
    const TensorView *q, *k, *v, *g, *beta, *out;
    float* state;
    int64_t head, key_head, d;
    float scale;
};

float beta_at(const TensorView& t, int64_t head, int64_t token) { return t.row_f32(token)[head]; }

// Tokens [t0, t0 + n) one by one.
void recurrent_tokens(const VecKernels& vk, const HeadArgs& a, int64_t t0, int64_t n, std::vector<float>& decay) {
    const int64_t d = a.d;
    float* M = a.state;
    decay.resize(static_cast<size_t>(d));
    for (int64_t t = t0; t < t0 + n; ++t) {
        const float* q = a.q->row_f32(a.key_head, t);
        const float* k = a.k->row_f32(a.key_head, t);
        const float* v = a.v->row_f32(a.head, t);
        const float* g = a.g->row_f32(a.head, t);
        const float beta = beta_at(*a.beta, a.head, t);
        for (int64_t i = 0; i < d; ++i) decay[i] = std::exp(g[i]);
        float* o = a.out->row_f32(a.head, t);
        for (int64_t j = 0; j < d; ++j) {
            float* col = M + j * d;
            vk.mul(col, decay.data(), col, d);
            const float delta = beta * (v[j] - vk.dot(col, k, d));
            vk.axpy(delta, k, col, d);
            o[j] = a.scale * vk.dot(col, q, d);
        }
    }
}

// C = A B (accumulate: C += A B), row-major, strides in floats; A given as
// its transpose (k rows of m) when a_transposed.
void gemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
          int64_t k, bool accumulate = false, bool a_transposed = false) {
    small_gemm(SmallGemm{a, lda, b, ldb, c, ldc, m, n, k, accumulate, a_transposed});
}

// dst (rows x cols, ld_dst) = src^T (src: cols x rows, ld_src).
void transpose(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
    ops::transpose(Transpose{src, ld_src, dst, ld_dst, rows, cols});
}

// A chunk's working set (c <= kChunk tokens, head size d).
struct ChunkScratch {
    // c x d, per token and key channel: cumulative log decay; rel_i =
    // exp(G_i - G_0) and its inverse.
    std::vector<float> G, rel, inv_rel;
    std::vector<float> decay;  // d: exp(G_0), then exp(G_C) (A_0, A_C)
    std::vector<float> neg_G0;  // d: -G_0
    // c x d token rows: [Kp; Qp] (k_i, scale q_i times rel_i), Km = k_i / rel_i,
    // Ka = k_i A_i, Qa = scale q_i A_i, v_i, Kd = k_i exp(G_C - G_i); the outputs.
    std::vector<float> KQ, Km, Ka, Qa, V, Kd, O;
    std::vector<float> KmT;    // d x kChunk: Km^T
    std::vector<float> AP;     // 2c x c: Kp_i . Km_j (then L), Qp_i . Km_j (P)
    // kChunk x kChunk: N, T = (I - N)^-1, BU[j][i] = T_ij beta_j, PT[j][i] = P_ij.
    std::vector<float> N, T, BU, PT;
    // d x c: U^T, then Vn^T in place. d x 2c: [Qa^T | W^T] and
    // X = S [Qa^T | W^T] (then O^T in the first half).
    std::vector<float> VnT, XB, X;
    explicit ChunkScratch(int64_t d) {
        const auto cd = static_cast<size_t>(kChunk * d), cc = static_cast<size_t>(kChunk * kChunk);
        for (std::vector<float>* v : {&G, &rel, &inv_rel, &Km, &Ka, &Qa, &V, &Kd, &O, &KmT, &VnT}) v->resize(cd);
        for (std::vector<float>* v : {&KQ, &XB, &X}) v->resize(2 * cd);
        AP.resize(2 * cc);
        for (std::vector<float>* v : {&N, &T, &BU, &PT}) v->assign(cc, 0.0f);
        decay.resize(static_cast<size_t>(d));
        neg_G0.resize(static_cast<size_t>(d));
    }
};

// One chunk of c tokens from t0 in the factored form, computed transposed in
// the state's own layout S = M^T (row j = value j) as the gated delta rule's
// chunks: U^T = V^T BU, W^T = Ka^T BU, X = S [Qa^T | W^T] (one product over
// the state), Vn^T = U^T - X_W, O^T = X_Q + Vn^T P^T, S' = S diag(A_C) + Vn^T Kd.
void factored_chunk(const VecKernels& vk, const HeadArgs& a, int64_t t0, int64_t c, ChunkScratch& s) {
    const int64_t d = a.d, ldx = 2 * c;
    float* S = a.state;
    const float* G = s.G.data();
    float* Kp = s.KQ.data();
    float* Qp = Kp + c * d;
    // Two vectorised exps per channel and token: rel_i = exp(G_i - G_0) (at
    // most 1) and its inverse exp(G_0 - G_i) (finite by the span check;
    // cheaper than a division here), and A_0 = exp(G_0); every other decay is
    // a product of these.
    float* A0 = s.decay.data();
    vk.exp_shift_sum(G, 0.0f, A0, d);
    vk.scale(G, -1.0f, s.neg_G0.data(), d);
    for (int64_t i = 0; i < c; ++i) {
        // (Whole rows through the vector kernels: this file is built for the
        // baseline instruction set.)
        float* rel = &s.rel[i * d];
        float* inv_rel = &s.inv_rel[i * d];
        vk.add(&G[i * d], s.neg_G0.data(), inv_rel, d);  // G_i - G_0
        vk.exp_shift_sum(inv_rel, 0.0f, rel, d);
        vk.scale(inv_rel, -1.0f, inv_rel, d);
        vk.exp_shift_sum(inv_rel, 0.0f, inv_rel, d);  // exp(G_0 - G_i), as finite as rel
        const float* k = a.k->row_f32(a.key_head, t0 + i);
        const float* q = a.q->row_f32(a.key_head, t0 + i);
        vk.mul(k, rel, &Kp[i * d], d);
        vk.scale_mul(q, a.scale, rel, &Qp[i * d], d);
        vk.mul(k, inv_rel, &s.Km[i * d], d);
        vk.mul(&Kp[i * d], A0, &s.Ka[i * d], d);
        vk.mul(&Qp[i * d], A0, &s.Qa[i * d], d);
        std::copy_n(a.v->row_f32(a.head, t0 + i), d, &s.V[i * d]);
    }
    // [Kp; Qp] Km^T: rows 0..c-1 the k-k products, rows c..2c-1 the q-k products.
    transpose(s.Km.data(), d, s.KmT.data(), kChunk, d, c);
    gemm(s.KQ.data(), d, s.KmT.data(), kChunk, s.AP.data(), c, 2 * c, c, d);
    // T = (I - N)^-1 with N_ij = -beta_i (Kp_i . Km_j) (j < i), by forward
    // substitution on whole rows of kChunk (T_j is zero past j); then
    // U = T diag(beta) V and W = T diag(beta) Ka, used transposed through
    // BU[j][i] = T_ij beta_j.
    for (int64_t i = 0; i < c; ++i) {
        const float beta = beta_at(*a.beta, a.head, t0 + i);
        float* Ni = &s.N[i * kChunk];
        for (int64_t j = 0; j < i; ++j) Ni[j] = -beta * s.AP[i * c + j];
        float* Ti = &s.T[i * kChunk];
        std::fill_n(Ti, kChunk, 0.0f);
        Ti[i] = 1.0f;
        vk.weighted_rows(Ni, s.T.data(), kChunk * sizeof(float), i, Ti, kChunk);
    }
    transpose(s.T.data(), kChunk, s.BU.data(), kChunk, c, c);  // T^T, zero below the diagonal
    for (int64_t j = 0; j < c; ++j) vk.scale(&s.BU[j * kChunk], beta_at(*a.beta, a.head, t0 + j), &s.BU[j * kChunk], c);
    gemm(s.V.data(), d, s.BU.data(), kChunk, s.VnT.data(), c, d, c, c, false, /*a_transposed=*/true);
    gemm(s.Ka.data(), d, s.BU.data(), kChunk, s.XB.data() + c, ldx, d, c, c, false, /*a_transposed=*/true);
    transpose(s.Qa.data(), d, s.XB.data(), ldx, d, c);
    // X = S [Qa^T | W^T], from the state at the chunk's start; Vn^T = U^T - (W M)^T.
    gemm(S, d, s.XB.data(), ldx, s.X.data(), ldx, d, 2 * c, d);
    for (int64_t j = 0; j < d; ++j) {
        float* vn = &s.VnT[j * c];
        const float* mw = &s.X[j * ldx + c];
        for (int64_t i = 0; i < c; ++i) vn[i] -= mw[i];
    }
    // O^T = X_Q + Vn^T P^T (P_ij for j <= i), then as rows.
    for (int64_t j = 0; j < c; ++j)
        for (int64_t i = 0; i < c; ++i) s.PT[j * kChunk + i] = j <= i ? s.AP[(c + i) * c + j] : 0.0f;
    gemm(s.VnT.data(), c, s.PT.data(), kChunk, s.X.data(), ldx, d, c, c, /*accumulate=*/true);
    transpose(s.X.data(), ldx, s.O.data(), d, c, d);
    for (int64_t i = 0; i < c; ++i) std::copy_n(&s.O[i * d], d, a.out->row_f32(a.head, t0 + i));
    // S' = S diag(A_C) + Vn^T Kd, Kd_i = k_i exp(G_C - G_i) = Km_i rel_C, in
    // one pass over the state.
    const float* rel_last = &s.rel[(c - 1) * d];
    for (int64_t i = 0; i < c; ++i) vk.mul(&s.Km[i * d], rel_last, &s.Kd[i * d], d);
    vk.mul(A0, rel_last, A0, d);  // A_C
    small_gemm(SmallGemm{.a = s.VnT.data(), .lda = c, .b = s.Kd.data(), .ldb = d, .c = S, .ldc = d, .m = d, .n = d,
                         .k = c, .accumulate = true, .c_col_scale = A0});
}

// Asks for the rows of the chunk from token t0 (q, k, v, g to read, out to
// write) while this chunk computes: they are apart by the other heads'
// rows, so they mostly come from memory.
void prefetch_chunk(const HeadArgs& a, int64_t t0, int64_t n_tokens) {
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
    for (int64_t t = t0; t < std::min(n_tokens, t0 + kChunk); ++t) {
        lines(a.q->row_f32(a.key_head, t), false);
        lines(a.k->row_f32(a.key_head, t), false);
        lines(a.v->row_f32(a.head, t), false);
        lines(a.g->row_f32(a.head, t), false);
        lines(a.out->row_f32(a.head, t), true);
    }
}

void chunked_head(const VecKernels& vk, const HeadArgs& a, int64_t n_tokens) {
    const int64_t d = a.d;
    ChunkScratch s(d);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kChunk) {
        const int64_t c = std::min(kChunk, n_tokens - t0);
        // The cumulative log decays, and whether any channel spans too far.
        float* G = s.G.data();
        bool factorable = true;
        for (int64_t i = 0; i < c; ++i) {
            const float* g = a.g->row_f32(a.head, t0 + i);
            if (i == 0) {
                std::copy_n(g, d, G);
            } else {
                vk.add(&G[(i - 1) * d], g, &G[i * d], d);
            }
        }
        for (int64_t f = 0; f < d && factorable; ++f) factorable = G[f] - G[(c - 1) * d + f] < kMaxFactoredSpan;
        prefetch_chunk(a, t0 + c, n_tokens);
        if (factorable)
            factored_chunk(vk, a, t0, c, s);
        else
            recurrent_tokens(vk, a, t0, c, s.decay);
    }
}

}  // namespace

void CpuOps::kimi_delta_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& g,
                                  const TensorView& beta, const TensorView& state, const GatedDeltaParams& params,
                                  const TensorView& out) {
    check_kimi_delta_attention(q, k, v, g, beta, state, out);
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
                       params.head_map == DeltaHeadMap::Tiled ? h % n_k_heads : h / group, d, params.scale};
            if (chunked) {
                chunked_head(vk, a, n_tokens);
            } else {
                std::vector<float> decay;
                recurrent_tokens(vk, a, 0, n_tokens, decay);
            }
        },
        1);
}

}  // namespace cria::ops
