// AVX-512 kernels (F/BW/VL/DQ + VNNI). Compiled for that target with a pragma
// and only ever called after runtime detection (cpu::best_isa()).
//
// Quantised types: weights are decoded to unsigned bytes u = q + offset and
// multiplied with the signed 8-bit activations by vpdpbusd (u8 x s8, four
// products summed per 32-bit lane); the offset is taken back out exactly:
// - 32-value blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4): offset 128, removed
//   by starting each vpdpbusd from the precomputed -128 * (lane sum of the
//   activations) (ActivationFormat::Q8_0Split), two blocks per zmm register.
// - super-blocks (Q2_K..Q6_K, IQ4_XS) against Q8_K: 64 values per zmm; lane
//   sums are multiplied by the sub-block scales in int32, and the offset and
//   the mins are removed through Q8_K's 16-value sums (bsums), in float.
// Tiles of MR weight rows x NC activation columns reuse every decoded weight
// register NC times and every activation register MR times.

#include <cstdint>
#include <cstring>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
#include "matmul/code_tables.h"
#include "matmul/kernels.h"
#include "matmul/scales.h"
#include "matmul/tile_dispatch.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's own _mm512_castsi256_si512 trips -Wuninitialized (its upper half is
// undefined by definition); silence that false positive here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace cria::matmul::detail {
namespace {

using namespace cria::quant;

inline float half(f16_bits h) { return _cvtsh_ss(h); }

// Software prefetch of the weight rows. A tile reads its R rows as R separate
// streams, and a row is often just one 4 KiB page (F16 at k = 2048) or a few:
// the hardware prefetchers stop at page boundaries and restart slowly, so the
// kernels ask for the bytes kPrefetchDistance ahead of what they read now
// (one thread, 2048 x 8192: F16 12.4 -> 18.5 GB/s, Q8_0 13.5 -> 17.3, Q4_K
// 9.8 -> 13.0). Prefetching past the end of a row is harmless.
constexpr size_t kPrefetchDistance = 1024;

// Prefetches [offset, offset + bytes) + kPrefetchDistance of each of R rows.
template <int R>
inline void prefetch_rows(const Tile& t, size_t offset, size_t bytes) {
    for (int r = 0; r < R; ++r) {
        const char* row = reinterpret_cast<const char*>(t.w + r * t.w_stride) + offset + kPrefetchDistance;
        for (size_t line = 0; line < bytes; line += 64) _mm_prefetch(row + line, _MM_HINT_T0);
    }
}

// ---- float weights ---------------------------------------------------------------------
enum class FloatKind { F32, F16, BF16 };

template <FloatKind Kind>
inline __m512 load_weights(const uint8_t* row, int64_t i, __mmask16 m) {
    if constexpr (Kind == FloatKind::F32) {
        return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
    } else if constexpr (Kind == FloatKind::F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i));
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
}

template <FloatKind Kind>
struct FloatKernel {
    static constexpr int MR = 4, NC = 4;
    static constexpr size_t kBytes = Kind == FloatKind::F32 ? 4 : 2;
    template <int R, int C>
    static void run(const Tile& t) {
        __m512 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
        for (int64_t i = 0; i < t.k; i += 16) {
            const int64_t left = t.k - i;
            const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
            __m512 w[R];
            prefetch_rows<R>(t, static_cast<size_t>(i) * kBytes, 16 * kBytes);
            for (int r = 0; r < R; ++r) w[r] = load_weights<Kind>(t.w + r * t.w_stride, i, m);
            for (int c = 0; c < C; ++c) {
                const __m512 x = _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(t.a + c * t.a_stride) + i);
                for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(w[r], x, acc[r][c]);
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = _mm512_reduce_add_ps(acc[r][c]);
    }
};

// ---- 32-value blocks, two per register -----------------------------------------------
// Register layout of a pair of blocks b0, b1: [b0 0..15 | b0 16..31 | b1 0..15 | b1 16..31].

// The 16 packed bytes of two blocks as [x0 | x0 >> 4 | x1 | x1 >> 4], low nibbles.
inline __m512i nibbles_of_pair(const uint8_t* q0, const uint8_t* q1) {
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q0));
    const __m128i x1 = q1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)) : _mm_setzero_si128();
    const __m512i y = _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(x0), x1, 1));
    __m512i z = _mm512_shuffle_i64x2(y, y, 0x50);          // [x0, x0, x1, x1]
    z = _mm512_mask_srli_epi16(z, 0xFF00FF00u, z, 4);        // high nibbles in lanes 1 and 3
    return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
}

// A table replicated in every 128-bit lane.
inline __m512i lane_table(const uint8_t* t) {
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// [d0 x 8, d1 x 8] from two f16 scales.
inline __m512 pair_scales(f16_bits d0, f16_bits d1) {
    return _mm512_cvtph_ps(_mm256_mask_set1_epi16(_mm256_set1_epi16(static_cast<short>(d0)), 0xFF00, static_cast<short>(d1)));
}

// [2^(e0-128) x 8, 2^(e1-128) x 8]: MXFP4's E8M0 scales, halved (see
// e8m0_to_f32_half): exponent bits e-1 for e >= 2, subnormals below.
inline __m512 pair_scales_e8m0(uint8_t e0, uint8_t e1) {
    const __m512i e = _mm512_mask_set1_epi32(_mm512_set1_epi32(e0), 0xFF00, e1);
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, tiny));
}

struct DecodeQ4_0 {
    static constexpr bool has_min = false;
    using Block = block_q4_0;
    static __m512i pair(const Block* b, bool two, __m512& d) {
        const __m512i table = lane_table(kCodeTables.q4_0);
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        return _mm512_shuffle_epi8(table, nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr));
    }
};

struct DecodeIq4Nl {
    static constexpr bool has_min = false;
    using Block = block_iq4_nl;
    static __m512i pair(const Block* b, bool two, __m512& d) {
        const __m512i table = lane_table(kCodeTables.iq4nl);
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        return _mm512_shuffle_epi8(table, nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr));
    }
};

struct DecodeMxfp4 {
    static constexpr bool has_min = false;
    using Block = block_mxfp4;
    static __m512i pair(const Block* b, bool two, __m512& d) {
        const __m512i table = lane_table(kCodeTables.mxfp4);
        d = pair_scales_e8m0(b[0].e, two ? b[1].e : uint8_t{0});
        return _mm512_shuffle_epi8(table, nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr));
    }
};

struct DecodeQ5_0 {
    static constexpr bool has_min = false;
    using Block = block_q5_0;
    static __m512i pair(const Block* b, bool two, __m512& d) {
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        __m512i u = nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr);
        const uint64_t high = high_bits(b[0].qh) | (two ? uint64_t{high_bits(b[1].qh)} << 32 : 0);
        u = _mm512_mask_add_epi8(u, high, u, _mm512_set1_epi8(16));
        return _mm512_add_epi8(u, _mm512_set1_epi8(112));  // q - 16 + 128
    }
};

struct DecodeQ8_0 {
    static constexpr bool has_min = false;
    using Block = block_q8_0;
    static __m512i pair(const Block* b, bool two, __m512& d) {
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
        const __m256i x1 = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)) : _mm256_setzero_si256();
        // Same register layout as the nibble types: 16 values per 128-bit lane.
        const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1);
        return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
    }
};

// Q4_1 / Q5_1: value = d*q + m with unsigned q; the kernel adds m * s for
// each block, s = d_a * sum(a) from Q8_1Split. `m` holds m/8 in the 8 lanes
// of each block, since the final lane sum adds 8 of them.
inline __m512 pair_mins(f16_bits m0, f16_bits m1) {
    return _mm512_mul_ps(pair_scales(m0, m1), _mm512_set1_ps(0.125f));
}

struct DecodeQ4_1 {
    static constexpr bool has_min = true;
    using Block = block_q4_1;
    static __m512i pair(const Block* b, bool two, __m512& d, __m512& m) {
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        m = pair_mins(b[0].m, two ? b[1].m : f16_bits{0});
        const __m512i u = nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr);
        return _mm512_or_si512(u, _mm512_set1_epi8(static_cast<char>(0x80)));  // q + 128
    }
};

struct DecodeQ5_1 {
    static constexpr bool has_min = true;
    using Block = block_q5_1;
    static __m512i pair(const Block* b, bool two, __m512& d, __m512& m) {
        d = pair_scales(b[0].d, two ? b[1].d : f16_bits{0});
        m = pair_mins(b[0].m, two ? b[1].m : f16_bits{0});
        __m512i u = nibbles_of_pair(b[0].qs, two ? b[1].qs : nullptr);
        const uint64_t high = high_bits(b[0].qh) | (two ? uint64_t{high_bits(b[1].qh)} << 32 : 0);
        u = _mm512_mask_add_epi8(u, high, u, _mm512_set1_epi8(16));
        return _mm512_or_si512(u, _mm512_set1_epi8(static_cast<char>(0x80)));  // q + 128
    }
};

template <class Decode>
struct PairKernel {
    static constexpr int MR = 4, NC = 4;
    template <int R, int C>
    static void run(const Tile& t) {
        using Block = typename Decode::Block;
        const int64_t nb = t.k / 32;
        const int64_t np = q8_0_split_pairs(t.k);
        const size_t corr_off = q8_0_split_corr_offset(t.k), scale_off = q8_0_split_scale_offset(t.k);
        const size_t sum_off = q8_1_split_sum_offset(t.k);
        __m512 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
        for (int64_t p = 0; p < np; ++p) {
            const bool two = 2 * p + 1 < nb;
            __m512i u[R];
            __m512 dw[R], mw[R];
            prefetch_rows<R>(t, 2 * static_cast<size_t>(p) * sizeof(Block), 2 * sizeof(Block));
            for (int r = 0; r < R; ++r) {
                const Block* blocks = reinterpret_cast<const Block*>(t.w + r * t.w_stride) + 2 * p;
                if constexpr (Decode::has_min) u[r] = Decode::pair(blocks, two, dw[r], mw[r]);
                else u[r] = Decode::pair(blocks, two, dw[r]);
            }
            for (int c = 0; c < C; ++c) {
                const uint8_t* act = t.a + c * t.a_stride;
                const __m512i a = _mm512_load_si512(act + 64 * p);
                const __m512i corr = _mm512_load_si512(act + corr_off + 64 * p);
                const __m512 da = _mm512_load_ps(reinterpret_cast<const float*>(act + scale_off) + 16 * p);
                for (int r = 0; r < R; ++r) {
                    const __m512i dot = _mm512_dpbusd_epi32(corr, u[r], a);
                    acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw[r], da), acc[r][c]);
                }
                if constexpr (Decode::has_min) {
                    const __m512 sa = _mm512_load_ps(reinterpret_cast<const float*>(act + sum_off) + 16 * p);
                    for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(mw[r], sa, acc[r][c]);
                }
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = _mm512_reduce_add_ps(acc[r][c]);
    }
};

// ---- super-blocks against Q8_K ------------------------------------------------------
// Per super-block a decoder gives: scales (16 int32, one per 16 values),
// offset_mins (16 floats: what each 16-value group subtracts per unit of
// activation sum, i.e. dmin*min or d*offset*scale) and d; per chunk j (values
// 64j..64j+63) the unsigned quants.

inline __m512i dup_pairs(__m512i v, int first) {
    // [v[first], v[first], v[first+1], v[first+1], ...] for 8 source lanes.
    const __m512i idx = _mm512_add_epi32(_mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                                         _mm512_set1_epi32(first));
    return _mm512_permutexvar_epi32(idx, v);
}

inline __m512i two_halves(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

inline __m512i bit_select(int b0, int b1) {
    return two_halves(_mm256_set1_epi8(static_cast<char>(1u << b0)), _mm256_set1_epi8(static_cast<char>(1u << b1)));
}

inline __m512i low_high_nibbles(const uint8_t* q) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const __m256i m = _mm256_set1_epi8(0x0F);
    return two_halves(_mm256_and_si256(x, m), _mm256_and_si256(_mm256_srli_epi16(x, 4), m));
}

struct DecodeQ4_K {
    using Block = block_q4_K;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        // Built in registers: storing the bytes and reloading them as one
        // vector would stall on store forwarding.
        uint32_t u[4];
        scales_mins_k4_words(b.scales, u);
        const __m512i v = _mm512_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(u[0]), static_cast<int>(u[1]),
                                                              static_cast<int>(u[2]), static_cast<int>(u[3])));
        scales = dup_pairs(v, 0);
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(dup_pairs(v, 8)), _mm512_set1_ps(half(b.dmin)));
        d = half(b.d);
    }
    static __m512i chunk(const Block& b, int j) { return low_high_nibbles(b.qs + 32 * j); }
};

struct DecodeQ5_K {
    using Block = block_q5_K;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        // Built in registers: storing the bytes and reloading them as one
        // vector would stall on store forwarding.
        uint32_t u[4];
        scales_mins_k4_words(b.scales, u);
        const __m512i v = _mm512_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(u[0]), static_cast<int>(u[1]),
                                                              static_cast<int>(u[2]), static_cast<int>(u[3])));
        scales = dup_pairs(v, 0);
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(dup_pairs(v, 8)), _mm512_set1_ps(half(b.dmin)));
        d = half(b.d);
    }
    static __m512i chunk(const Block& b, int j) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
        const __mmask64 high = _mm512_test_epi8_mask(two_halves(h, h), bit_select(2 * j, 2 * j + 1));
        const __m512i u = low_high_nibbles(b.qs + 32 * j);
        return _mm512_mask_add_epi8(u, high, u, _mm512_set1_epi8(16));
    }
};

struct DecodeQ6_K {
    using Block = block_q6_K;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        d = half(b.d);
        scales = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(scales), _mm512_set1_ps(32.0f * d));  // quants stored +32
    }
    static __m512i chunk(const Block& b, int j) {
        const int n = j / 2;
        const __m512i l = _mm512_loadu_si512(b.ql + 64 * n);
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * n));
        const __m512i hz = two_halves(h, _mm256_srli_epi16(h, 2));
        const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
        if (j % 2 == 0)
            return _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(hz, m2), 4));
        return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                               _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hz, 4), m2), 4));
    }
};

// Two-bit fields of Q2_K/Q3_K: chunk j holds shifts 2(j%2) and 2(j%2)+1 of qs[32(j/2)..].
inline __m512i two_bit_chunk(const uint8_t* qs, int j) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (j / 2)));
    __m512i z = two_halves(q, _mm256_srli_epi16(q, 2));
    if (j % 2) z = _mm512_srli_epi16(z, 4);
    return _mm512_and_si512(z, _mm512_set1_epi8(3));
}

struct DecodeQ3_K {
    using Block = block_q3_K;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        uint32_t u[4];
        q3_k_scale_words(b.scales, u);
        d = half(b.d);
        const __m128i biased = _mm_setr_epi32(static_cast<int>(u[0]), static_cast<int>(u[1]), static_cast<int>(u[2]),
                                              static_cast<int>(u[3]));
        scales = _mm512_sub_epi32(_mm512_cvtepu8_epi32(biased), _mm512_set1_epi32(32));
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(scales), _mm512_set1_ps(4.0f * d));  // quants stored +4
    }
    static __m512i chunk(const Block& b, int j) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
        const int bit = 4 * (j / 2) + 2 * (j % 2);
        const __mmask64 high = _mm512_test_epi8_mask(two_halves(h, h), bit_select(bit, bit + 1));
        const __m512i u = two_bit_chunk(b.qs, j);
        return _mm512_mask_add_epi8(u, high, u, _mm512_set1_epi8(4));
    }
};

struct DecodeQ2_K {
    using Block = block_q2_K;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        scales = _mm512_and_si512(v, _mm512_set1_epi32(0x0F));
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4)), _mm512_set1_ps(half(b.dmin)));
        d = half(b.d);
    }
    static __m512i chunk(const Block& b, int j) { return two_bit_chunk(b.qs, j); }
};

struct DecodeIq4Xs {
    using Block = block_iq4_xs;
    static void prepare(const Block& b, __m512i& scales, __m512& mins, float& d) {
        // ls[ib] = low nibble ib of scales_l | 2 bits ib of scales_h << 4, biased by 32.
        uint32_t low;
        std::memcpy(&low, b.scales_l, 4);
        const __m512i ib = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
        const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(low)), _mm512_slli_epi32(ib, 2)),
                                            _mm512_set1_epi32(0x0F));
        const __m512i hi = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(b.scales_h), _mm512_slli_epi32(ib, 1)),
                                            _mm512_set1_epi32(3));
        d = half(b.d);
        scales = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32));
        mins = _mm512_mul_ps(_mm512_cvtepi32_ps(scales), _mm512_set1_ps(128.0f * d));  // table stored +128
    }
    static __m512i chunk(const Block& b, int j) {
        const __m512i z = low_high_nibbles(b.qs + 32 * j);  // [x0 lo, x1 lo, x0 hi, x1 hi]
        const __m512i ordered = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
        return _mm512_shuffle_epi8(lane_table(kCodeTables.iq4nl), ordered);
    }
};

template <class Decode>
struct SuperBlockKernel {
    static constexpr int MR = 2, NC = 4;
    template <int R, int C>
    static void run(const Tile& t) {
        using Block = typename Decode::Block;
        const int64_t nb = t.k / QK_K;
        __m512 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const Block* wb[R];
            __m512i scales[R];
            __m512 mins[R];
            float d[R];
            prefetch_rows<R>(t, static_cast<size_t>(b) * sizeof(Block), sizeof(Block));
            for (int r = 0; r < R; ++r) {
                wb[r] = reinterpret_cast<const Block*>(t.w + r * t.w_stride) + b;
                Decode::prepare(*wb[r], scales[r], mins[r], d[r]);
            }
            __m512i isum[R][C];
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
            for (int j = 0; j < 4; ++j) {
                // Lane l of chunk j belongs to 16-value group 4j + l/4.
                const __m512i idx = _mm512_add_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                                     _mm512_set1_epi32(4 * j));
                __m512i u[R], s[R];
                for (int r = 0; r < R; ++r) {
                    u[r] = Decode::chunk(*wb[r], j);
                    s[r] = _mm512_permutexvar_epi32(idx, scales[r]);
                }
                for (int c = 0; c < C; ++c) {
                    const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                    const __m512i a = _mm512_loadu_si512(act->qs + 64 * j);
                    for (int r = 0; r < R; ++r) {
                        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[r], a);
                        isum[r][c] = _mm512_add_epi32(isum[r][c], _mm512_mullo_epi32(dot, s[r]));
                    }
                }
            }
            for (int c = 0; c < C; ++c) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                const __m512 group_sums = _mm512_mul_ps(
                    _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act->bsums)))),
                    _mm512_set1_ps(act->d));
                for (int r = 0; r < R; ++r) {
                    acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]), _mm512_set1_ps(d[r] * act->d), acc[r][c]);
                    acc[r][c] = _mm512_fnmadd_ps(mins[r], group_sums, acc[r][c]);
                }
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = _mm512_reduce_add_ps(acc[r][c]);
    }
};

}  // namespace

TypeKernel avx512_kernel(ElementType t) {
    switch (t) {
        case ElementType::F32: return make_kernel<FloatKernel<FloatKind::F32>>(ActivationFormat::F32);
        case ElementType::F16: return make_kernel<FloatKernel<FloatKind::F16>>(ActivationFormat::F32);
        case ElementType::BF16: return make_kernel<FloatKernel<FloatKind::BF16>>(ActivationFormat::F32);
        case ElementType::Q4_0: return make_kernel<PairKernel<DecodeQ4_0>>(ActivationFormat::Q8_0Split);
        case ElementType::Q5_0: return make_kernel<PairKernel<DecodeQ5_0>>(ActivationFormat::Q8_0Split);
        case ElementType::Q8_0: return make_kernel<PairKernel<DecodeQ8_0>>(ActivationFormat::Q8_0Split);
        case ElementType::IQ4_NL: return make_kernel<PairKernel<DecodeIq4Nl>>(ActivationFormat::Q8_0Split);
        case ElementType::MXFP4: return make_kernel<PairKernel<DecodeMxfp4>>(ActivationFormat::Q8_0Split);
        case ElementType::Q2_K: return make_kernel<SuperBlockKernel<DecodeQ2_K>>(ActivationFormat::Q8_K);
        case ElementType::Q3_K: return make_kernel<SuperBlockKernel<DecodeQ3_K>>(ActivationFormat::Q8_K);
        case ElementType::Q4_K: return make_kernel<SuperBlockKernel<DecodeQ4_K>>(ActivationFormat::Q8_K);
        case ElementType::Q5_K: return make_kernel<SuperBlockKernel<DecodeQ5_K>>(ActivationFormat::Q8_K);
        case ElementType::Q6_K: return make_kernel<SuperBlockKernel<DecodeQ6_K>>(ActivationFormat::Q8_K);
        case ElementType::IQ4_XS: return make_kernel<SuperBlockKernel<DecodeIq4Xs>>(ActivationFormat::Q8_K);
        case ElementType::Q4_1: return make_kernel<PairKernel<DecodeQ4_1>>(ActivationFormat::Q8_1Split);
        case ElementType::Q5_1: return make_kernel<PairKernel<DecodeQ5_1>>(ActivationFormat::Q8_1Split);
        default: return {};
    }
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else  // not x86-64: no AVX-512 kernels

namespace cria::matmul::detail {
TypeKernel avx512_kernel(ElementType) { return {}; }
}  // namespace cria::matmul::detail

#endif
