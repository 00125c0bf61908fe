#pragma once
// AMX tile semantics in plain C++: the tile configuration (palette 1) and an
// emulation of the tile instructions the AMX kernels use (amx_kernel.h).
//
// The AMX kernels are written against a "tile policy" with this interface:
//   configure(const TileConfig&)      _tile_loadconfig
//   zero<T>()                         _tile_zero
//   load<T>(base, stride)             _tile_loadd: rows of colsb bytes, stride apart
//   store<T>(base, stride)            _tile_stored
//   dp_signed_unsigned<C, A, B>()     _tile_dpbsud (A int8, B uint8, C int32)
//   dp_bf16<C, A, B>()                _tile_dpbf16ps (A, B bf16 pairs, C f32;
//                                     emulation only until a kernel uses it)
//   release()                         _tile_release
// The hardware policy (packed_kernels_amx.cpp) issues the instructions; the
// EmulatedTiles policy below computes exactly the same results in C++, so
// the kernels' packing, tile shapes, loop structure and scale handling run
// (and are tested) on machines without AMX. Shape errors that would fault on
// the hardware (#UD on an unconfigured tile, mismatched shapes) throw here.
//
// Element rules (Intel SDM, TDPBSUD / TDPBF16PS): with K = colsb(A) / 4,
//   C[m][n] (int32) += sum_{k<K} sum_{i<4} int8(A[m][4k+i]) * uint8(B[k][4n+i])
// wrapping modulo 2^32 (the kernels keep sums far inside int32); B's row k
// holds, for each output column n, the 4 bytes 4k..4k+3 of the product's
// inner dimension: the "B[k/4][n*4 + k%4]" layout that Rows16 packing
// already uses for its 16 rows. TDPBF16PS multiplies bf16 pairs with the
// products and sums done in float, denormal inputs and outputs flushed to
// zero, round to nearest even; emulated here as
// C[m][n] = fma(A.hi, B.hi, fma(A.lo, B.lo, C)), our reading of the SDM's
// pseudo-code that has NOT been compared with hardware. No kernel uses it
// yet (BF16 weights stay on the AVX512-BF16 kernel); the integer form, whose
// result is exact, is what the kernels use.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "cria/core/error.h"

namespace cria::matmul::detail {

inline constexpr int kAmxTiles = 8;
inline constexpr int kAmxMaxRows = 16;
inline constexpr int kAmxMaxRowBytes = 64;

// The 64-byte operand of LDTILECFG, palette 1.
struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};  // bytes per row of tile i (0: unconfigured)
    uint8_t rows[16] = {};    // rows of tile i (0: unconfigured)

    void set(int tile, int n_rows, int row_bytes) {
        colsb[tile] = static_cast<uint16_t>(row_bytes);
        rows[tile] = static_cast<uint8_t>(n_rows);
    }
};
static_assert(sizeof(TileConfig) == 64);

class EmulatedTiles {
public:
    void configure(const TileConfig& c) {
        if (c.palette != 1) throw Error("AMX emulation: only palette 1 exists");
        for (int i = 0; i < kAmxTiles; ++i) {
            if (c.rows[i] > kAmxMaxRows || c.colsb[i] > kAmxMaxRowBytes || c.colsb[i] % 4 != 0 ||
                ((c.rows[i] == 0) != (c.colsb[i] == 0)))
                throw Error("AMX emulation: tile " + std::to_string(i) + " has a shape palette 1 cannot hold");
            tiles_[i].rows = c.rows[i];
            tiles_[i].colsb = c.colsb[i];
            std::memset(tiles_[i].data, 0, sizeof(tiles_[i].data));  // LDTILECFG zeroes the tiles
        }
        configured_ = true;
    }

    template <int T>
    void zero() {
        std::memset(used<T>().data, 0, sizeof(Tile::data));
    }

    template <int T>
    void load(const void* base, size_t stride) {
        Tile& t = used<T>();
        for (int r = 0; r < t.rows; ++r)
            std::memcpy(t.data[r], static_cast<const uint8_t*>(base) + static_cast<size_t>(r) * stride, t.colsb);
    }

    template <int T>
    void store(void* base, size_t stride) {
        const Tile& t = used<T>();
        for (int r = 0; r < t.rows; ++r)
            std::memcpy(static_cast<uint8_t*>(base) + static_cast<size_t>(r) * stride, t.data[r], t.colsb);
    }

    template <int C, int A, int B>
    void dp_signed_unsigned() {
        Tile& c = used<C>();
        const Tile& a = used<A>();
        const Tile& b = used<B>();
        check_product_shapes(c, a, b);
        for (int m = 0; m < c.rows; ++m) {
            for (int n = 0; n < c.colsb / 4; ++n) {
                int32_t acc;
                std::memcpy(&acc, c.data[m] + 4 * n, 4);
                // Wrapping int32 addition, as the hardware does.
                uint32_t sum = static_cast<uint32_t>(acc);
                for (int k = 0; k < a.colsb / 4; ++k)
                    for (int i = 0; i < 4; ++i)
                        sum += static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(a.data[m][4 * k + i])) *
                                                     static_cast<int32_t>(b.data[k][4 * n + i]));
                acc = static_cast<int32_t>(sum);
                std::memcpy(c.data[m] + 4 * n, &acc, 4);
            }
        }
    }

    template <int C, int A, int B>
    void dp_bf16() {
        Tile& c = used<C>();
        const Tile& a = used<A>();
        const Tile& b = used<B>();
        check_product_shapes(c, a, b);
        for (int m = 0; m < c.rows; ++m) {
            for (int n = 0; n < c.colsb / 4; ++n) {
                float acc;
                std::memcpy(&acc, c.data[m] + 4 * n, 4);
                for (int k = 0; k < a.colsb / 4; ++k) {
                    const float a_lo = bf16_at(a.data[m] + 4 * k), a_hi = bf16_at(a.data[m] + 4 * k + 2);
                    const float b_lo = bf16_at(b.data[k] + 4 * n), b_hi = bf16_at(b.data[k] + 4 * n + 2);
                    acc = flush(__builtin_fmaf(a_hi, b_hi, flush(__builtin_fmaf(a_lo, b_lo, acc))));
                }
                std::memcpy(c.data[m] + 4 * n, &acc, 4);
            }
        }
    }

    void release() { configured_ = false; }

private:
    struct Tile {
        int rows = 0, colsb = 0;
        alignas(64) uint8_t data[kAmxMaxRows][kAmxMaxRowBytes] = {};
    };

    template <int T>
    Tile& used() {
        static_assert(T >= 0 && T < kAmxTiles, "AMX has tiles 0..7");
        if (!configured_ || tiles_[T].rows == 0)
            throw Error("AMX emulation: tile " + std::to_string(T) + " used without a configuration");
        return tiles_[T];
    }

    // C is M x N int32/f32, A is M x K dwords, B is K x N dwords.
    static void check_product_shapes(const Tile& c, const Tile& a, const Tile& b) {
        if (a.rows != c.rows || b.colsb != c.colsb || b.rows != a.colsb / 4)
            throw Error("AMX emulation: tile shapes do not form a product");
    }

    static float flush(float x) {
        return __builtin_fpclassify(0, 0, 0, 1, 0, x) == 1 ? __builtin_copysignf(0.0f, x) : x;
    }
    static float bf16_at(const uint8_t* p) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return flush(f);
    }

    Tile tiles_[kAmxTiles];
    bool configured_ = false;
};

}  // namespace cria::matmul::detail
