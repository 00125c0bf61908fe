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
// one exp per channel and token); the second factor grows with the
// chunk's decay, so a chunk whose decay spans more than exp(-80) in some
// channel (where it would leave float's range) runs the recurrent form
// instead. Both forms are exact reformulations of ops.h's recurrence.

#include <algorithm>
#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/recurrent_checks.h"
#include "ops/small_gemm.h"
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

// C = A B (accumulate: C += A B), row-major, strides in floats.
void gemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
          int64_t k, bool accumulate = false) {
    small_gemm(SmallGemm{a, lda, b, ldb, c, ldc, m, n, k, accumulate});
}

struct ChunkScratch {
    std::vector<float> G, rel, inv_rel, KQ, Km, KmT, AP, UW, Qa, MT, MW, MQ, Vn, VnT, Kd, decay;
    explicit ChunkScratch(int64_t d) {
        const auto cd = static_cast<size_t>(kChunk * d);
        for (std::vector<float>* v : {&G, &rel, &inv_rel}) v->resize(cd);
        KQ.resize(2 * cd);
        AP.resize(static_cast<size_t>(2 * kChunk * kChunk));
        UW.resize(2 * cd);
        for (std::vector<float>* v : {&Km, &KmT, &Qa, &MW, &MQ, &Vn, &VnT, &Kd}) v->resize(cd);
        MT.resize(static_cast<size_t>(d * d));
        decay.resize(static_cast<size_t>(d));
    }
};

// One chunk of c tokens from t0 in the factored form.
void factored_chunk(const VecKernels& vk, const HeadArgs& a, int64_t t0, int64_t c, ChunkScratch& s) {
    const int64_t d = a.d;
    float* M = a.state;  // column j (value j) = the d key values at M + j * d
    float* G = s.G.data();
    float* Kp = s.KQ.data();  // c rows: k_i ⊙ exp(G_i - G_0)
    float* Qp = Kp + c * d;   // c rows: scale q_i ⊙ exp(G_i - G_0)
    // One exp per channel and token: rel_i = exp(G_i - G_0) (at most 1), its
    // inverse, and A_i = exp(G_0) rel_i; every other decay is a product of these.
    float* rel = s.rel.data();
    float* inv_rel = s.inv_rel.data();
    float* A0 = s.decay.data();
    for (int64_t f = 0; f < d; ++f) A0[f] = std::exp(G[f]);
    for (int64_t i = 0; i < c; ++i) {
        const float* k = a.k->row_f32(a.key_head, t0 + i);
        const float* q = a.q->row_f32(a.key_head, t0 + i);
        for (int64_t f = 0; f < d; ++f) {
            const float r = i == 0 ? 1.0f : std::exp(G[i * d + f] - G[f]);
            rel[i * d + f] = r;
            inv_rel[i * d + f] = 1.0f / r;
            Kp[i * d + f] = k[f] * r;
            Qp[i * d + f] = a.scale * q[f] * r;
            s.Km[i * d + f] = k[f] * inv_rel[i * d + f];
            s.Qa[i * d + f] = Qp[i * d + f] * A0[f];
        }
    }
    // [Kp; Qp] Km^T: rows 0..c-1 the k-k products, rows c..2c-1 the q-k products.
    for (int64_t i = 0; i < c; ++i)
        for (int64_t f = 0; f < d; ++f) s.KmT[f * kChunk + i] = s.Km[i * d + f];
    gemm(s.KQ.data(), d, s.KmT.data(), kChunk, s.AP.data(), c, 2 * c, c, d);
    // [U | W] rows: [beta_i v_i | beta_i A_i ⊙ k_i], then (I + L)^-1 by forward
    // substitution (row i minus L_ij times the solved rows j < i).
    const size_t uw_bytes = static_cast<size_t>(2 * d) * sizeof(float);
    for (int64_t i = 0; i < c; ++i) {
        const float beta = beta_at(*a.beta, a.head, t0 + i);
        float* Li = &s.AP[i * c];
        for (int64_t j = 0; j < i; ++j) Li[j] *= -beta;
        float* uw = &s.UW[i * 2 * d];
        vk.scale(a.v->row_f32(a.head, t0 + i), beta, uw, d);
        const float* k = a.k->row_f32(a.key_head, t0 + i);
        for (int64_t f = 0; f < d; ++f) uw[d + f] = beta * Kp[i * d + f] * A0[f];
        vk.weighted_rows(Li, s.UW.data(), uw_bytes, i, uw, 2 * d);
    }
    // Vn = U - W M and M^T (A_i ⊙ scale q_i), from the state at the chunk's start.
    for (int64_t j = 0; j < d; ++j)
        for (int64_t f = 0; f < d; ++f) s.MT[f * d + j] = M[j * d + f];
    gemm(s.UW.data() + d, 2 * d, s.MT.data(), d, s.MW.data(), d, c, d, d);
    gemm(s.Qa.data(), d, s.MT.data(), d, s.MQ.data(), d, c, d, d);
    for (int64_t i = 0; i < c; ++i)
        for (int64_t j = 0; j < d; ++j) s.Vn[i * d + j] = s.UW[i * 2 * d + j] - s.MW[i * d + j];
    // O_i = M^T (A_i ⊙ scale q_i) + sum_{j <= i} P_ij Vn_j.
    const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
    for (int64_t i = 0; i < c; ++i) {
        float* o = a.out->row_f32(a.head, t0 + i);
        std::copy_n(&s.MQ[i * d], d, o);
        vk.weighted_rows(&s.AP[(c + i) * c], s.Vn.data(), row_bytes, i + 1, o, d);
    }
    // M' = diag(A_C) M + sum_i (k_i ⊙ exp(G_C - G_i)) Vn_i^T.
    const float* rel_last = rel + (c - 1) * d;
    for (int64_t i = 0; i < c; ++i) {
        for (int64_t f = 0; f < d; ++f) s.Kd[i * d + f] = s.Km[i * d + f] * rel_last[f];
        for (int64_t j = 0; j < d; ++j) s.VnT[j * kChunk + i] = s.Vn[i * d + j];
    }
    for (int64_t f = 0; f < d; ++f) A0[f] *= rel_last[f];  // A_C
    for (int64_t j = 0; j < d; ++j) vk.mul(M + j * d, A0, M + j * d, d);
    gemm(s.VnT.data(), kChunk, s.Kd.data(), d, M, d, d, d, c, /*accumulate=*/true);
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
            for (int64_t f = 0; f < d; ++f) G[i * d + f] = (i == 0 ? 0.0f : G[(i - 1) * d + f]) + g[f];
        }
        for (int64_t f = 0; f < d && factorable; ++f) factorable = G[f] - G[(c - 1) * d + f] < kMaxFactoredSpan;
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
