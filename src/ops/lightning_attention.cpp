// Lightning attention of CpuOps (Ops::lightning_attention), one task per
// head: each head's d x d state stays in the core's cache while its tokens
// are processed. The state is kept as d rows of d keys (row j = value j,
// M + j * d), so both the update and the read are row operations.
//
// Recurrent form (one-token steps, short batches): per token each row
// M_j = gamma M_j + v_j k (axpy), then o_j = M_j . q (dot_rows).
//
// Blocked form (prompts), blocks of B = 64 tokens, with Q, K, V the block's
// rows and gamma^m the decay after m steps:
//   O = diag(gamma^(i+1)) Q M^T  +  (S ⊙ D) V,   S = Q K^T, D_ij = gamma^(i-j) (j <= i, else 0)
//   M' = gamma^B M + V^T diag(gamma^(B-1-s)) K
// three products of whole blocks (small_gemm) instead of a pass over the
// state per token. The decays never grow (rates >= 0), so nothing overflows.

#include <algorithm>
#include <cmath>
#include <vector>

#include "cria/ops/cpu_ops.h"
#include "ops/lightning_checks.h"
#include "ops/small_gemm.h"
#include "ops/transpose.h"
#include "ops/vec.h"

namespace cria::ops {
namespace {

constexpr int64_t kBlock = 64;
// Below this many tokens the block's set-up costs more than it saves.
constexpr int64_t kBlockedFrom = 8;

struct HeadArgs {
    const TensorView *q, *k, *v, *out;
    float* state;
    int64_t head, n_tokens, d;
    float rate;
};

void recurrent_head(const VecKernels& vk, const HeadArgs& a) {
    const int64_t d = a.d;
    const float decay = std::exp(-a.rate);
    float* M = a.state;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const float* q = a.q->row_f32(a.head, t);
        const float* k = a.k->row_f32(a.head, t);
        const float* v = a.v->row_f32(a.head, t);
        vk.scale(M, decay, M, d * d);
        for (int64_t j = 0; j < d; ++j) vk.axpy(v[j], k, M + j * d, d);
        vk.dot_rows(q, M, static_cast<size_t>(d) * sizeof(float), d, a.out->row_f32(a.head, t), d);
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

void blocked_head(const VecKernels& vk, const HeadArgs& a) {
    const int64_t d = a.d;
    const auto bd = static_cast<size_t>(kBlock * d);
    std::vector<float> Q(bd), K(bd), V(bd), KT(bd), S(static_cast<size_t>(kBlock * kBlock)), MT(d * d),
        O(bd), powers(kBlock + 1);
    for (int64_t m = 0; m <= kBlock; ++m) powers[m] = std::exp(-a.rate * static_cast<float>(m));
    float* M = a.state;  // row j = value j's d key values
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += kBlock) {
        const int64_t c = std::min(kBlock, a.n_tokens - t0);
        for (int64_t i = 0; i < c; ++i) {
            std::copy_n(a.q->row_f32(a.head, t0 + i), d, &Q[i * d]);
            std::copy_n(a.k->row_f32(a.head, t0 + i), d, &K[i * d]);
            std::copy_n(a.v->row_f32(a.head, t0 + i), d, &V[i * d]);
        }
        transpose(K.data(), d, KT.data(), kBlock, d, c);
        // S = Q K^T, masked and decayed: S_ij *= gamma^(i-j) for j <= i, 0 above.
        gemm(Q.data(), d, KT.data(), kBlock, S.data(), c, c, c, d);
        for (int64_t i = 0; i < c; ++i)
            for (int64_t j = 0; j < c; ++j) S[i * c + j] = j <= i ? S[i * c + j] * powers[i - j] : 0.0f;
        // O = diag(gamma^(i+1)) Q M^T + S V, from the state at the block's start.
        transpose(M, d, MT.data(), d, d, d);
        gemm(Q.data(), d, MT.data(), d, O.data(), d, c, d, d);
        for (int64_t i = 0; i < c; ++i) vk.scale(&O[i * d], powers[i + 1], &O[i * d], d);
        gemm(S.data(), c, V.data(), d, O.data(), d, c, d, c, /*accumulate=*/true);
        for (int64_t i = 0; i < c; ++i) std::copy_n(&O[i * d], d, a.out->row_f32(a.head, t0 + i));
        // M' = gamma^c M + V^T diag(gamma^(c-1-s)) K, in one pass over the
        // state (V^T read as the transpose of V's rows).
        for (int64_t s = 0; s < c; ++s) vk.scale(&K[s * d], powers[c - 1 - s], &K[s * d], d);
        small_gemm(SmallGemm{.a = V.data(), .lda = d, .b = K.data(), .ldb = d, .c = M, .ldc = d, .m = d, .n = d, .k = c,
                             .accumulate = true, .a_transposed = true, .c_scale = powers[c]});
    }
}

}  // namespace

void CpuOps::lightning_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                 const TensorView& state, const LightningParams& params, const TensorView& out) {
    check_lightning_attention(q, k, v, state, params, out);
    const int64_t d = q.ne[0], n_head = q.ne[1], n_tokens = q.ne[2];
    if (n_tokens == 0) return;
    const bool blocked = params.form == LightningForm::Blocked ||
                         (params.form == LightningForm::Auto && n_tokens >= kBlockedFrom);
    const VecKernels& vk = vec_kernels();
    pool_.parallel_for(
        n_head,
        [&](int64_t h, int) {
            const HeadArgs a{&q, &k, &v, &out, state.row_f32(h), h, n_tokens, d, params.rates[h]};
            if (blocked) {
                blocked_head(vk, a);
            } else {
                recurrent_head(vk, a);
            }
        },
        1);
}

}  // namespace cria::ops
