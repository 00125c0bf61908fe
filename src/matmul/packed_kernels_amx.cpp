// The AMX kernels on the hardware (amx_kernel.h): the tile policy issues the
// AMX instructions, the block math uses AVX-512. Compiled for AMX and
// AVX-512 with a target pragma (like the other kernel files); nothing here
// runs unless cpu::best_isa() is Isa::Amx, which needs the CPU's AMX-TILE
// and AMX-INT8 bits, the OS's XTILECFG/XTILEDATA state and the granted
// arch_prctl permission (src/cpu/features.cpp).
//
// The tile registers are named in the instructions themselves (the
// intrinsics take literal tile numbers), so the policy's templates map each
// tile number the kernel uses to its own instruction.

// Everything the kernels share with other files (the emulated tiles, the
// scalar block math, the headers they use) comes in before the target
// pragma, so those inline functions are compiled for the baseline CPU here
// too and the linker may keep either file's copy.
#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
#include "matmul/amx_block_math.h"
#include "matmul/amx_tiles.h"
#include "matmul/code_tables.h"
#include "matmul/kernels.h"
#include "matmul/scales.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,amx-tile,amx-int8,amx-bf16")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The kernel templates come in under the pragma, so that the block math and
// the tile instructions inline into their loops. Their instantiations here
// are this file's own (the policies below live in an anonymous namespace)
// and amx_kernel.h's one plain function is `static`, so nothing compiled
// for AVX-512 is shared with the baseline files.
#include "matmul/amx_kernel_select.h"

namespace cria::matmul::detail {
namespace {

template <int>
inline constexpr bool kNoSuchTile = false;

// Expands `STMT(n)` for the tile number T (0..7) with a literal n.
#define CRIA_AMX_FOR_TILE(T, STMT)                                         \
    if constexpr ((T) == 0) { STMT(0); }                                   \
    else if constexpr ((T) == 1) { STMT(1); }                              \
    else if constexpr ((T) == 2) { STMT(2); }                              \
    else if constexpr ((T) == 3) { STMT(3); }                              \
    else if constexpr ((T) == 4) { STMT(4); }                              \
    else if constexpr ((T) == 5) { STMT(5); }                              \
    else if constexpr ((T) == 6) { STMT(6); }                              \
    else if constexpr ((T) == 7) { STMT(7); }                              \
    else { static_assert(kNoSuchTile<T>, "AMX has tiles 0..7"); }

struct HardwareTiles {
    void configure(const TileConfig& c) { _tile_loadconfig(&c); }
    template <int T>
    void zero() {
#define CRIA_ZERO(n) _tile_zero(n)
        CRIA_AMX_FOR_TILE(T, CRIA_ZERO)
#undef CRIA_ZERO
    }
    template <int T>
    void load(const void* base, size_t stride) {
#define CRIA_LOAD(n) _tile_loadd(n, base, static_cast<long>(stride))
        CRIA_AMX_FOR_TILE(T, CRIA_LOAD)
#undef CRIA_LOAD
    }
    template <int T>
    void store(void* base, size_t stride) {
#define CRIA_STORE(n) _tile_stored(n, base, static_cast<long>(stride))
        CRIA_AMX_FOR_TILE(T, CRIA_STORE)
#undef CRIA_STORE
    }
    // The products the kernels issue: C[2i + g] += A[4 + i] x B[6 + g].
    template <int C, int A, int B>
    void dp_signed_unsigned() {
        if constexpr (C == 0 && A == 4 && B == 6) _tile_dpbsud(0, 4, 6);
        else if constexpr (C == 1 && A == 4 && B == 7) _tile_dpbsud(1, 4, 7);
        else if constexpr (C == 2 && A == 5 && B == 6) _tile_dpbsud(2, 5, 6);
        else if constexpr (C == 3 && A == 5 && B == 7) _tile_dpbsud(3, 5, 7);
        else static_assert(kNoSuchTile<C>, "add this tile combination to HardwareTiles");
    }
    void release() { _tile_release(); }
};

#undef CRIA_AMX_FOR_TILE

// The block math with AVX-512: the same operations as ScalarBlockMath
// (exact f16 conversion, vpshufb table lookups, cvtdq2ps, one mul, one fma).
struct Avx512BlockMath {
    static void prefetch(const uint8_t* q) {
        for (int line = 0; line < 8; ++line)
            _mm_prefetch(reinterpret_cast<const char*>(q + 2048 + 64 * line), _MM_HINT_T0);
    }
    static void f16_scales(const uint8_t* p, float out[16]) {
        _mm512_store_ps(out, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
    }
    // As packed_kernels_avx512.cpp's E8M0Scales: e < 2 gives the subnormals
    // 0x00200000 << e, otherwise the exponent field e - 1.
    static void e8m0_scales(const uint8_t* p, float out[16]) {
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        const __mmask16 is_small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
        _mm512_store_ps(out, _mm512_castsi512_ps(_mm512_mask_blend_epi32(is_small, normal, small)));
    }
    static void unpack_nibbles(const uint8_t* q, const uint8_t* table, uint8_t* out) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
        for (int j = 0; j < 4; ++j) {
            const __m512i p = _mm512_loadu_si512(q + 64 * j);
            _mm512_store_si512(out + 64 * j, _mm512_shuffle_epi8(lut, _mm512_and_si512(p, low)));
            _mm512_store_si512(out + 64 * (j + 4),
                               _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(p, 4), low)));
        }
    }
    static void unpack_q4_k_chunk(const uint8_t* q, uint8_t* lo, uint8_t* hi) {
        const __m512i low = _mm512_set1_epi8(0x0F);
        for (int t = 0; t < 8; ++t) {
            const __m512i p = _mm512_loadu_si512(q + 64 * t);
            _mm512_store_si512(lo + 64 * t, _mm512_and_si512(p, low));
            _mm512_store_si512(hi + 64 * t, _mm512_and_si512(_mm512_srli_epi16(p, 4), low));
        }
    }
    static void unpack_q6_k(const uint8_t* sb, uint8_t* out) {
        const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
        for (int g = 0; g < 16; ++g) {
            const int n = g / 8, m = (g % 8) / 2, h = g % 2;
            for (int i = 0; i < 4; ++i) {
                const int t = 4 * h + i;
                __m512i ql = _mm512_loadu_si512(sb + 64 * (16 * n + 8 * (m & 1) + t));
                const __m512i qh = _mm512_loadu_si512(sb + 2048 + 64 * (8 * n + t));
                if (m >= 2) ql = _mm512_srli_epi16(ql, 4);
                const __m512i high = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * m), m2), 4);
                _mm512_store_si512(out + 256 * g + 64 * i, _mm512_or_si512(_mm512_and_si512(ql, m4), high));
            }
        }
    }
    static void scale_add_signed(const int32_t* c, int32_t correction, const uint8_t* scales, int32_t* isum) {
        const __m512i s = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
        const __m512i dot = _mm512_sub_epi32(_mm512_load_si512(c), _mm512_set1_epi32(correction));
        _mm512_store_si512(isum, _mm512_add_epi32(_mm512_load_si512(isum), _mm512_mullo_epi32(dot, s)));
    }
    static void scale_add(const int32_t* c, const uint8_t* scales, int32_t* isum) {
        const __m512i s = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
        _mm512_store_si512(isum, _mm512_add_epi32(_mm512_load_si512(isum), _mm512_mullo_epi32(_mm512_load_si512(c), s)));
    }
    static void mins_add(const uint8_t* mins, int32_t bsum, int32_t* msum) {
        const __m512i m = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins)));
        _mm512_store_si512(msum, _mm512_add_epi32(_mm512_load_si512(msum), _mm512_mullo_epi32(m, _mm512_set1_epi32(bsum))));
    }
    static void accumulate_k(const int32_t* isum, const int32_t* msum, const float* d, const float* dmin, float da,
                             float* acc) {
        const __m512 vda = _mm512_set1_ps(da);
        __m512 a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(isum)), _mm512_mul_ps(_mm512_load_ps(d), vda),
                                   _mm512_load_ps(acc));
        a = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(msum)), _mm512_mul_ps(_mm512_load_ps(dmin), vda), a);
        _mm512_store_ps(acc, a);
    }
    static void accumulate_rounded(const int32_t* isum, const float* d, float da, float* acc) {
        constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        const __m512 scale = _mm512_mul_round_ps(_mm512_load_ps(d), _mm512_set1_ps(da), kNearest);
        const __m512 part = _mm512_mul_round_ps(scale, _mm512_cvtepi32_ps(_mm512_load_si512(isum)), kNearest);
        _mm512_store_ps(acc, _mm512_add_round_ps(_mm512_load_ps(acc), part, kNearest));
    }
    static void accumulate(const int32_t* c, int32_t correction, const float* dw, float da, float* acc) {
        const __m512i dot = _mm512_sub_epi32(_mm512_load_si512(c), _mm512_set1_epi32(correction));
        const __m512 scale = _mm512_mul_ps(_mm512_load_ps(dw), _mm512_set1_ps(da));
        _mm512_store_ps(acc, _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, _mm512_load_ps(acc)));
    }
};

}  // namespace

TypeKernel packed_amx_kernel(ElementType t, Packing p) { return amx_kernel_for<HardwareTiles, Avx512BlockMath>(t, p); }

// The hardware kernels' AVX-512 block math on emulated tiles: runs on any
// AVX-512 VNNI machine, so tests check that half of the hardware kernels
// without AMX.
TypeKernel packed_amx_emulated_tiles_avx512_math_kernel(ElementType t, Packing p) {
    return amx_kernel_for<EmulatedTiles, Avx512BlockMath>(t, p);
}

}  // namespace cria::matmul::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options

#else

#include "matmul/amx_kernel_select.h"

namespace cria::matmul::detail {
TypeKernel packed_amx_kernel(ElementType, Packing) { return {}; }
TypeKernel packed_amx_emulated_tiles_avx512_math_kernel(ElementType, Packing) { return {}; }
}  // namespace cria::matmul::detail

#endif
