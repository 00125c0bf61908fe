// AVX2 kernels (with FMA and F16C), for the Avx2 and Avx512 levels. Compiled
// for that target with a pragma and only called after runtime detection.
//
// Quantised types multiply bytes with vpmaddubsw (u8 x s8 -> pairs summed in
// int16) and vpmaddwd (int16 pairs -> int32):
// - 32-value blocks (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4) against Q8_0: the weights are
//   decoded to signed bytes w and the sign is moved onto the activation
//   (|w| x sign(a, w)), so no int16 sum can saturate;
// - super-blocks (Q2_K..Q6_K) against Q8_K: the weights are decoded to small
//   unsigned values (< 64, so the int16 pair sums stay below 2^15); vpmaddwd
//   applies the 16-value group scales; offsets and mins come out through
//   Q8_K's group sums (bsums) in float.
// - IQ4_XS against Q8_K: signed values and the sign trick, per 32 values.
// - Q4_1, Q5_1 against Q8_1: the weights are unsigned (< 32) and go straight
//   into vpmaddubsw (pair sums below 2 * 31 * 128, no saturation); the
//   minimum m comes in through Q8_1's s = d_a * sum(a), as m * s per block.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
#include "matmul/kernels.h"
#include "matmul/scales.h"
#include "matmul/tile_dispatch.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace cria::matmul::detail {
namespace {
// Signed code books for vpshufb, constant-initialised (no code runs before the
// CPU has been checked).
struct Avx2Tables {
    alignas(16) int8_t q4_0[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
};
constexpr Avx2Tables kAvx2Tables{};
}  // namespace
}  // namespace cria::matmul::detail

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace cria::matmul::detail {
namespace {

using namespace cria::quant;

inline float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// ---- float weights ---------------------------------------------------------------------
enum class FloatKind { F32, F16, BF16 };

template <FloatKind Kind>
inline __m256 load8(const uint8_t* row, int64_t i) {
    if constexpr (Kind == FloatKind::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    } else if constexpr (Kind == FloatKind::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    } else {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
}

template <FloatKind Kind>
inline float load1(const uint8_t* row, int64_t i) {
    if constexpr (Kind == FloatKind::F32) {
        float v;
        std::memcpy(&v, row + 4 * i, 4);
        return v;
    } else {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        return Kind == FloatKind::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
}

template <FloatKind Kind>
struct FloatKernel {
    static constexpr int MR = 3, NC = 4;
    template <int R, int C>
    static void run(const Tile& t) {
        __m256 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
        const int64_t k8 = t.k / 8 * 8;
        for (int64_t i = 0; i < k8; i += 8) {
            __m256 w[R];
            for (int r = 0; r < R; ++r) w[r] = load8<Kind>(t.w + r * t.w_stride, i);
            for (int c = 0; c < C; ++c) {
                const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(t.a + c * t.a_stride) + i);
                for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(w[r], x, acc[r][c]);
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) {
                float s = hsum(acc[r][c]);
                const float* x = reinterpret_cast<const float*>(t.a + c * t.a_stride);
                for (int64_t i = k8; i < t.k; ++i) s += load1<Kind>(t.w + r * t.w_stride, i) * x[i];
                t.y[c * t.y_stride + r] = s;
            }
    }
};

// ---- 32-value blocks against Q8_0 -------------------------------------------------------
inline __m256i nibbles(const uint8_t* qs) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i y = _mm256_inserti128_si256(_mm256_castsi128_si256(x), _mm_srli_epi16(x, 4), 1);
    return _mm256_and_si256(y, _mm256_set1_epi8(0x0F));
}
inline __m256i lookup(const int8_t* table, __m256i idx) {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table))), idx);
}

struct DecodeQ4_0 {
    using Block = block_q4_0;
    static __m256i values(const Block& b) { return lookup(kAvx2Tables.q4_0, nibbles(b.qs)); }
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
};
struct DecodeIq4Nl {
    using Block = block_iq4_nl;
    static __m256i values(const Block& b) { return lookup(kvalues_iq4nl, nibbles(b.qs)); }
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
};
struct DecodeMxfp4 {
    using Block = block_mxfp4;
    static __m256i values(const Block& b) { return lookup(kvalues_mxfp4, nibbles(b.qs)); }
    static float scale(const Block& b) { return e8m0_to_f32_half(b.e); }
};
// 0xFF in byte i where bit i of the 32-bit word is set.
inline __m256i bits_to_bytes(uint32_t bits) {
    const __m256i which_byte = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), which_byte);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}
struct DecodeQ5_0 {
    using Block = block_q5_0;
    static __m256i values(const Block& b) {
        const __m256i high = _mm256_and_si256(bits_to_bytes(high_bits(b.qh)), _mm256_set1_epi8(0x10));
        return _mm256_sub_epi8(_mm256_or_si256(nibbles(b.qs), high), _mm256_set1_epi8(16));
    }
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
};
struct DecodeQ8_0 {
    using Block = block_q8_0;
    static __m256i values(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
};

// Signed decoders (no kMinimum) multiply |w| by a with a's sign flipped where
// w is negative (vpmaddubsw wants one unsigned operand) against Q8_0; the
// unsigned decoders with a minimum (Q4_1, Q5_1: value = d*q + m, q < 32)
// multiply q directly against Q8_1 and add m * s, s = d_a * sum(a).
template <class Decode>
struct BlockKernel {
    static constexpr int MR = 2, NC = 4;
    static constexpr bool kMin = requires { Decode::kMinimum; };
    using Act = std::conditional_t<kMin, block_q8_1, block_q8_0>;
    template <int R, int C>
    static void run(const Tile& t) {
        using Block = typename Decode::Block;
        const int64_t nb = t.k / 32;
        const __m256i ones = _mm256_set1_epi16(1);
        __m256 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            __m256i w[R], wabs[R];
            float dw[R];
            __m256 m8[R];  // m / 8 in every lane: the 8 lanes together add m * s
            for (int r = 0; r < R; ++r) {
                const Block& blk = reinterpret_cast<const Block*>(t.w + r * t.w_stride)[b];
                w[r] = Decode::values(blk);
                dw[r] = Decode::scale(blk);
                if constexpr (kMin) {
                    m8[r] = _mm256_set1_ps(_cvtsh_ss(blk.m) * 0.125f);
                } else {
                    wabs[r] = _mm256_sign_epi8(w[r], w[r]);
                }
            }
            for (int c = 0; c < C; ++c) {
                const Act& act = reinterpret_cast<const Act*>(t.a + c * t.a_stride)[b];
                const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.qs));
                const float da = _cvtsh_ss(act.d);
                for (int r = 0; r < R; ++r) {
                    __m256i p;
                    if constexpr (kMin)
                        p = _mm256_maddubs_epi16(w[r], a);
                    else
                        p = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(a, w[r]));
                    const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
                    acc[r][c] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw[r] * da), acc[r][c]);
                    if constexpr (kMin) acc[r][c] = _mm256_fmadd_ps(m8[r], _mm256_set1_ps(_cvtsh_ss(act.s)), acc[r][c]);
                }
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = hsum(acc[r][c]);
    }
};

// ---- 32-value blocks with a minimum against Q8_1 ---------------------------------------
// value = d*q + m with unsigned q, so a block's dot is d*d_a*sum(q*a) + m*s.
struct DecodeQ4_1 {
    using Block = block_q4_1;
    static constexpr bool kMinimum = true;
    static __m256i values(const Block& b) { return nibbles(b.qs); }
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
};
struct DecodeQ5_1 {
    using Block = block_q5_1;
    static constexpr bool kMinimum = true;
    static float scale(const Block& b) { return _cvtsh_ss(b.d); }
    static __m256i values(const Block& b) {
        const __m256i high = _mm256_and_si256(bits_to_bytes(high_bits(b.qh)), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(nibbles(b.qs), high);
    }
};

// ---- super-blocks against Q8_K ---------------------------------------------------------
// prepare: 16 int16 group scales, 16 float group offsets/mins (what each group
// subtracts per unit of activation sum) and d; chunk(j): values 32j..32j+31
// as unsigned bytes below 64.
// The mins are kept in registers: written as scalars and reloaded as vectors
// they would stall on store forwarding.
struct Prepared {
    alignas(32) int16_t scale[16];
    __m256 mins_lo, mins_hi;  // groups 0..7 and 8..15
    float d;
};



inline __m256i two_halves(__m128i lo, __m128i hi) { return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1); }
inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
// 0x01 where bit `bit` of each byte of h is set, else 0.
inline __m256i bit_of(__m256i h, int bit) {
    const __m256i m = _mm256_set1_epi8(static_cast<char>(1u << bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, m), m), _mm256_set1_epi8(1));
}

inline void prepare_k4(const uint8_t* packed, float d, float dmin, Prepared& p) {
    uint32_t u[4];
    scales_mins_k4_words(packed, u);
    uint8_t sm[16];
    std::memcpy(sm, u, 16);
    for (int j = 0; j < 8; ++j) p.scale[2 * j] = p.scale[2 * j + 1] = sm[j];
    // Mins of sub-blocks 0..7 (bytes 8..15), each covering two 16-value groups.
    const __m256 mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_setr_epi32(static_cast<int>(u[2]), static_cast<int>(u[3]), 0, 0)));
    const __m256 scaled = _mm256_mul_ps(mins, _mm256_set1_ps(dmin));
    p.mins_lo = _mm256_permutevar8x32_ps(scaled, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    p.mins_hi = _mm256_permutevar8x32_ps(scaled, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
    p.d = d;
}

struct DecodeQ4_K {
    using Block = block_q4_K;
    static void prepare(const Block& b, Prepared& p) { prepare_k4(b.scales, _cvtsh_ss(b.d), _cvtsh_ss(b.dmin), p); }
    static __m256i chunk(const Block& b, int j) {
        __m256i x = load32(b.qs + 32 * (j / 2));
        if (j % 2) x = _mm256_srli_epi16(x, 4);
        return _mm256_and_si256(x, _mm256_set1_epi8(0x0F));
    }
};
struct DecodeQ5_K {
    using Block = block_q5_K;
    static void prepare(const Block& b, Prepared& p) { prepare_k4(b.scales, _cvtsh_ss(b.d), _cvtsh_ss(b.dmin), p); }
    static __m256i chunk(const Block& b, int j) {
        __m256i x = load32(b.qs + 32 * (j / 2));
        if (j % 2) x = _mm256_srli_epi16(x, 4);
        x = _mm256_and_si256(x, _mm256_set1_epi8(0x0F));
        return _mm256_or_si256(x, _mm256_slli_epi16(bit_of(load32(b.qh), j), 4));
    }
};
struct DecodeQ6_K {
    using Block = block_q6_K;
    static void prepare(const Block& b, Prepared& p) {
        p.d = _cvtsh_ss(b.d);
        for (int g = 0; g < 16; ++g) p.scale[g] = b.scales[g];
        const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        const __m256 k = _mm256_set1_ps(32.0f * p.d);  // quants stored +32
        p.mins_lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), k);
        p.mins_hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), k);
    }
    static __m256i chunk(const Block& b, int j) {
        const int n = j / 4, part = j % 4;
        __m256i l = load32(b.ql + 64 * n + 32 * (part % 2));
        if (part >= 2) l = _mm256_srli_epi16(l, 4);
        l = _mm256_and_si256(l, _mm256_set1_epi8(0x0F));
        const __m256i h = _mm256_and_si256(_mm256_srli_epi16(load32(b.qh + 32 * n), 2 * part), _mm256_set1_epi8(3));
        return _mm256_or_si256(l, _mm256_slli_epi16(h, 4));
    }
};
inline __m256i two_bits(const uint8_t* qs, int j) {
    return _mm256_and_si256(_mm256_srli_epi16(load32(qs + 32 * (j / 4)), 2 * (j % 4)), _mm256_set1_epi8(3));
}
struct DecodeQ3_K {
    using Block = block_q3_K;
    static void prepare(const Block& b, Prepared& p) {
        p.d = _cvtsh_ss(b.d);
        uint32_t u[4];
        q3_k_scale_words(b.scales, u);
        const __m128i biased = _mm_setr_epi32(static_cast<int>(u[0]), static_cast<int>(u[1]), static_cast<int>(u[2]),
                                              static_cast<int>(u[3]));
        const __m128i sc = _mm_sub_epi8(biased, _mm_set1_epi8(32));
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.scale), _mm256_cvtepi8_epi16(sc));
        const __m256 k = _mm256_set1_ps(4.0f * p.d);  // quants stored +4
        p.mins_lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), k);
        p.mins_hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), k);
    }
    static __m256i chunk(const Block& b, int j) {
        const __m256i high = bit_of(load32(b.hmask), j);  // bit 4n + shift of hmask is bit j
        return _mm256_add_epi8(two_bits(b.qs, j), _mm256_slli_epi16(high, 2));
    }
};
struct DecodeQ2_K {
    using Block = block_q2_K;
    static void prepare(const Block& b, Prepared& p) {
        p.d = _cvtsh_ss(b.d);
        for (int g = 0; g < 16; ++g) p.scale[g] = b.scales[g] & 0x0F;
        const __m128i m = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), 4),
                                        _mm_set1_epi8(0x0F));
        const __m256 dmin = _mm256_set1_ps(_cvtsh_ss(b.dmin));
        p.mins_lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m)), dmin);
        p.mins_hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(m, 8))), dmin);
    }
    static __m256i chunk(const Block& b, int j) { return two_bits(b.qs, j); }
};

template <class Decode>
struct SuperBlockKernel {
    static constexpr int MR = 2, NC = 2;
    template <int R, int C>
    static void run(const Tile& t) {
        using Block = typename Decode::Block;
        const int64_t nb = t.k / QK_K;
        __m256 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const Block* wb[R];
            Prepared prep[R];
            for (int r = 0; r < R; ++r) {
                wb[r] = reinterpret_cast<const Block*>(t.w + r * t.w_stride) + b;
                Decode::prepare(*wb[r], prep[r]);
            }
            __m256i isum[R][C];
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
            for (int j = 0; j < 8; ++j) {
                __m256i u[R], s[R];
                for (int r = 0; r < R; ++r) {
                    u[r] = Decode::chunk(*wb[r], j);
                    // int16 lanes 0-7 (values 0..15) use group 2j, lanes 8-15 group 2j+1.
                    s[r] = two_halves(_mm_set1_epi16(prep[r].scale[2 * j]), _mm_set1_epi16(prep[r].scale[2 * j + 1]));
                }
                for (int c = 0; c < C; ++c) {
                    const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                    const __m256i a = load32(reinterpret_cast<const uint8_t*>(act->qs) + 32 * j);
                    for (int r = 0; r < R; ++r)
                        isum[r][c] = _mm256_add_epi32(isum[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(u[r], a), s[r]));
                }
            }
            for (int c = 0; c < C; ++c) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act->bsums));
                const __m256 dy = _mm256_set1_ps(act->d);
                const __m256 g0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(bs))), dy);
                const __m256 g1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(bs, 1))), dy);
                for (int r = 0; r < R; ++r) {
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]), _mm256_set1_ps(prep[r].d * act->d), acc[r][c]);
                    acc[r][c] = _mm256_fnmadd_ps(prep[r].mins_lo, g0, acc[r][c]);
                    acc[r][c] = _mm256_fnmadd_ps(prep[r].mins_hi, g1, acc[r][c]);
                }
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = hsum(acc[r][c]);
    }
};

// IQ4_XS: signed code-book values (up to 127 in magnitude), so the sign trick
// of the 32-value blocks, with one 6-bit scale per 32 values.
struct Iq4XsKernel {
    static constexpr int MR = 2, NC = 2;
    template <int R, int C>
    static void run(const Tile& t) {
        const int64_t nb = t.k / QK_K;
        __m256 acc[R][C];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const block_iq4_xs* wb[R];
            for (int r = 0; r < R; ++r) wb[r] = reinterpret_cast<const block_iq4_xs*>(t.w + r * t.w_stride) + b;
            __m256i isum[R][C];
            for (int r = 0; r < R; ++r)
                for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ++ib) {
                __m256i w[R], wabs[R], scale[R];
                for (int r = 0; r < R; ++r) {
                    const block_iq4_xs& x = *wb[r];
                    w[r] = lookup(kvalues_iq4nl, nibbles(x.qs + 16 * ib));
                    wabs[r] = _mm256_sign_epi8(w[r], w[r]);
                    const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((x.scales_h >> (2 * ib)) & 3) << 4);
                    scale[r] = _mm256_set1_epi16(static_cast<short>(ls - 32));
                }
                for (int c = 0; c < C; ++c) {
                    const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                    const __m256i a = load32(reinterpret_cast<const uint8_t*>(act->qs) + 32 * ib);
                    for (int r = 0; r < R; ++r) {
                        const __m256i p = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(a, w[r]));
                        isum[r][c] = _mm256_add_epi32(isum[r][c], _mm256_madd_epi16(p, scale[r]));
                    }
                }
            }
            for (int c = 0; c < C; ++c) {
                const auto* act = reinterpret_cast<const block_q8_K*>(t.a + c * t.a_stride) + b;
                for (int r = 0; r < R; ++r)
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]),
                                                _mm256_set1_ps(_cvtsh_ss(wb[r]->d) * act->d), acc[r][c]);
            }
        }
        for (int c = 0; c < C; ++c)
            for (int r = 0; r < R; ++r) t.y[c * t.y_stride + r] = hsum(acc[r][c]);
    }
};

}  // namespace

TypeKernel avx2_kernel(ElementType t) {
    switch (t) {
        case ElementType::F32: return make_kernel<FloatKernel<FloatKind::F32>>(ActivationFormat::F32);
        case ElementType::F16: return make_kernel<FloatKernel<FloatKind::F16>>(ActivationFormat::F32);
        case ElementType::BF16: return make_kernel<FloatKernel<FloatKind::BF16>>(ActivationFormat::F32);
        case ElementType::Q4_0: return make_kernel<BlockKernel<DecodeQ4_0>>(ActivationFormat::Q8_0);
        case ElementType::Q4_1: return make_kernel<BlockKernel<DecodeQ4_1>>(ActivationFormat::Q8_1);
        case ElementType::Q5_0: return make_kernel<BlockKernel<DecodeQ5_0>>(ActivationFormat::Q8_0);
        case ElementType::Q5_1: return make_kernel<BlockKernel<DecodeQ5_1>>(ActivationFormat::Q8_1);
        case ElementType::Q8_0: return make_kernel<BlockKernel<DecodeQ8_0>>(ActivationFormat::Q8_0);
        case ElementType::IQ4_NL: return make_kernel<BlockKernel<DecodeIq4Nl>>(ActivationFormat::Q8_0);
        case ElementType::MXFP4: return make_kernel<BlockKernel<DecodeMxfp4>>(ActivationFormat::Q8_0);
        case ElementType::Q2_K: return make_kernel<SuperBlockKernel<DecodeQ2_K>>(ActivationFormat::Q8_K);
        case ElementType::Q3_K: return make_kernel<SuperBlockKernel<DecodeQ3_K>>(ActivationFormat::Q8_K);
        case ElementType::Q4_K: return make_kernel<SuperBlockKernel<DecodeQ4_K>>(ActivationFormat::Q8_K);
        case ElementType::Q5_K: return make_kernel<SuperBlockKernel<DecodeQ5_K>>(ActivationFormat::Q8_K);
        case ElementType::Q6_K: return make_kernel<SuperBlockKernel<DecodeQ6_K>>(ActivationFormat::Q8_K);
        case ElementType::IQ4_XS: return make_kernel<Iq4XsKernel>(ActivationFormat::Q8_K);
        default: return {};
    }
}

}  // namespace cria::matmul::detail

#pragma GCC pop_options

#else

namespace cria::matmul::detail {
TypeKernel avx2_kernel(ElementType) { return {}; }
}  // namespace cria::matmul::detail

#endif
