// Scalar reference kernels: one dot product per (row, column), written for
// clarity. Quantised types compute the same integer sums as ggml's reference
// vec_dot (ggml-cpu/quants.c) against 8-bit activations; float types
// accumulate in double. Every SIMD kernel is tested against these.

#include <cstring>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
#include "matmul/kernels.h"
#include "matmul/scales.h"

namespace cria::matmul::detail {

using namespace cria::quant;

namespace {

// ---- float weights, f32 activations --------------------------------------------
float dot_f32(int64_t k, const void* w, const void* a) {
    const auto* wf = static_cast<const float*>(w);
    const auto* af = static_cast<const float*>(a);
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += static_cast<double>(wf[i]) * af[i];
    return static_cast<float>(s);
}
float dot_f16(int64_t k, const void* w, const void* a) {
    const auto* wh = static_cast<const f16_bits*>(w);
    const auto* af = static_cast<const float*>(a);
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += static_cast<double>(f16_to_f32(wh[i])) * af[i];
    return static_cast<float>(s);
}
float dot_bf16(int64_t k, const void* w, const void* a) {
    const auto* wh = static_cast<const bf16_bits*>(w);
    const auto* af = static_cast<const float*>(a);
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += static_cast<double>(bf16_to_f32(wh[i])) * af[i];
    return static_cast<float>(s);
}

// ---- 32-value blocks against Q8_0 / Q8_1 ---------------------------------------
// Each block's integer dot is exact; blocks are combined in float like ggml.
template <typename Block, typename Act, typename Decode>
float dot_blocks(int64_t k, const void* w, const void* a, Decode decode) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const Act*>(a);
    float sum = 0;
    for (int64_t b = 0; b < k / 32; ++b) {
        int8_t q[32];
        decode(x[b], q);
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += q[j] * y[b].qs[j];
        sum += static_cast<float>(isum) * (block_scale(x[b]) * f16_to_f32(y[b].d));
    }
    return sum;
}

float dot_q4_0(int64_t k, const void* w, const void* a) {
    return dot_blocks<block_q4_0, block_q8_0>(k, w, a, decode_q4_0);
}
float dot_q5_0(int64_t k, const void* w, const void* a) {
    return dot_blocks<block_q5_0, block_q8_0>(k, w, a, decode_q5_0);
}
float dot_q8_0(int64_t k, const void* w, const void* a) {
    return dot_blocks<block_q8_0, block_q8_0>(k, w, a, decode_q8_0);
}
float dot_iq4_nl(int64_t k, const void* w, const void* a) {
    return dot_blocks<block_iq4_nl, block_q8_0>(k, w, a, decode_iq4_nl);
}
float dot_mxfp4(int64_t k, const void* w, const void* a) {
    return dot_blocks<block_mxfp4, block_q8_0>(k, w, a, decode_mxfp4);
}

// Q4_1 / Q5_1 store unsigned quants and a minimum m: value = d*q + m, so
// dot = d*dy*sum(q*qy) + m*(dy*sum(qy)), the last factor being the s of Q8_1.
template <typename Block, typename Decode>
float dot_with_min(int64_t k, const void* w, const void* a, Decode decode) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const block_q8_1*>(a);
    float sum = 0;
    for (int64_t b = 0; b < k / 32; ++b) {
        int8_t q[32];
        decode(x[b], q);
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += q[j] * y[b].qs[j];
        sum += (f16_to_f32(x[b].d) * f16_to_f32(y[b].d)) * static_cast<float>(isum) +
               f16_to_f32(x[b].m) * f16_to_f32(y[b].s);
    }
    return sum;
}
float dot_q4_1(int64_t k, const void* w, const void* a) { return dot_with_min<block_q4_1>(k, w, a, decode_q4_1); }
float dot_q5_1(int64_t k, const void* w, const void* a) { return dot_with_min<block_q5_1>(k, w, a, decode_q5_1); }

// ---- 256-value super-blocks against Q8_K ---------------------------------------
// decode_superblock gives the 256 quants, 16 integer scales (one per 16
// values), 16 integer mins (0 when the type has none), d and dmin.
template <typename Block>
float dot_superblocks(int64_t k, const void* w, const void* a) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const block_q8_K*>(a);
    float sum = 0;
    for (int64_t b = 0; b < k / QK_K; ++b) {
        SuperBlock sb;
        decode_superblock(x[b], sb);
        sum += superblock_dot(sb, y[b]);
    }
    return sum;
}

using DotFn = float (*)(int64_t, const void*, const void*);

template <DotFn Dot>
void tile_reference(const Tile& t) {
    for (int c = 0; c < t.n_cols; ++c)
        for (int r = 0; r < t.n_rows; ++r)
            t.y[c * t.y_stride + r] = Dot(t.k, t.w + r * t.w_stride, t.a + c * t.a_stride);
}

template <DotFn Dot>
constexpr TypeKernel reference_kernel() { return {tile_reference<Dot>, 1, 1, ActivationFormat::F32}; }

TypeKernel scalar_kernel_for(ElementType t) {
    switch (t) {
        case ElementType::F32: return reference_kernel<dot_f32>();
        case ElementType::F16: return reference_kernel<dot_f16>();
        case ElementType::BF16: return reference_kernel<dot_bf16>();
        case ElementType::Q4_0: return reference_kernel<dot_q4_0>();
        case ElementType::Q4_1: return reference_kernel<dot_q4_1>();
        case ElementType::Q5_0: return reference_kernel<dot_q5_0>();
        case ElementType::Q5_1: return reference_kernel<dot_q5_1>();
        case ElementType::Q8_0: return reference_kernel<dot_q8_0>();
        case ElementType::IQ4_NL: return reference_kernel<dot_iq4_nl>();
        case ElementType::MXFP4: return reference_kernel<dot_mxfp4>();
        case ElementType::Q2_K: return reference_kernel<dot_superblocks<block_q2_K>>();
        case ElementType::Q3_K: return reference_kernel<dot_superblocks<block_q3_K>>();
        case ElementType::Q4_K: return reference_kernel<dot_superblocks<block_q4_K>>();
        case ElementType::Q5_K: return reference_kernel<dot_superblocks<block_q5_K>>();
        case ElementType::Q6_K: return reference_kernel<dot_superblocks<block_q6_K>>();
        case ElementType::IQ4_XS: return reference_kernel<dot_superblocks<block_iq4_xs>>();
        default: return {};
    }
}

}  // namespace

TypeKernel scalar_kernel(ElementType t) {
    TypeKernel k = scalar_kernel_for(t);
    k.act = activation_format(t);
    return k;
}

}  // namespace cria::matmul::detail
