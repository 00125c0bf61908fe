#pragma once
// Internal interface between the matmul driver (matmul.cpp) and the kernels
// of each instruction set (kernels_scalar.cpp, kernels_avx2.cpp,
// kernels_avx512.cpp).

#include <cstddef>
#include <cstdint>

#include "cria/core/element_type.h"
#include "cria/matmul/matmul.h"

namespace cria::matmul::detail {

// How activations are prepared for a weight type (ggml's vec_dot_type).
enum class ActivationFormat : uint8_t {
    F32,   // plain floats, copied as they are
    Q8_0,  // block_q8_0 per 32 values
    Q8_1,  // block_q8_1 per 32 values (Q8_0 plus d * sum)
    Q8_K,  // block_q8_K per 256 values
    // Q8_0 values (same rounding) laid out for the AVX-512 kernels, per pair
    // of blocks: 64 quants, then after all pairs 16 int32 lane corrections
    // (-128 * sum of each 4 quants) per pair, then 16 floats per pair (the
    // first block's scale 8 times, then the second's). See q8_0_split_*.
    Q8_0Split,
    // Q8_0Split followed by 16 floats per pair: Q8_1's s = d * sum(quants)
    // (rounded to f16 as Q8_1 stores it), 8 times per block.
    Q8_1Split,
    // Q8_0 values (same rounding) in three planes, for the packed (Rows16)
    // kernels: all quants (32 per block), then each block's scale as f32,
    // then each block's int32 sum of quants. See q8_0_planar_*.
    Q8_0Planar,
    // Values rounded to bf16 (f32_to_bf16, as ggml's vec_dot_type of BF16
    // weights), padded with zeros to an even count: per dword the pair of
    // values 2j, 2j + 1 that one vdpbf16ps lane multiplies.
    BF16Pairs,
};

// Offsets inside one Q8_0Split activation vector of k values.
inline int64_t q8_0_split_pairs(int64_t k) { return (k / 32 + 1) / 2; }
inline size_t q8_0_split_corr_offset(int64_t k) { return static_cast<size_t>(q8_0_split_pairs(k)) * 64; }
inline size_t q8_0_split_scale_offset(int64_t k) { return static_cast<size_t>(q8_0_split_pairs(k)) * 128; }
inline size_t q8_1_split_sum_offset(int64_t k) { return static_cast<size_t>(q8_0_split_pairs(k)) * 192; }

// Offsets inside one Q8_0Planar activation vector of k values.
inline size_t q8_0_planar_scale_offset(int64_t k) { return (static_cast<size_t>(k) + 63) / 64 * 64; }
inline size_t q8_0_planar_sum_offset(int64_t k) {
    return q8_0_planar_scale_offset(k) + (static_cast<size_t>(k / 32) * 4 + 63) / 64 * 64;
}

// Bytes of one activation vector of k values in `format`, padded to 64 bytes.
size_t activation_row_bytes(ActivationFormat format, int64_t k);
// Quantises one vector of k floats into `format` (the scalar reference
// rounding of ggml, the same on every ISA).
void prepare_activation_row(ActivationFormat format, const float* x, int64_t k, void* out);
// The scalar reference of prepare_activation_row (activation.cpp).
void prepare_activation_row_scalar(ActivationFormat format, const float* x, int64_t k, void* out);
// AVX-512 F/BW/DQ forms of Q8_K and Q8_0Planar, byte for byte the scalar
// ones (activation_avx512.cpp); false (nothing written) for other formats.
// Only where the CPU has AVX-512.
bool prepare_activation_row_avx512(ActivationFormat format, const float* x, int64_t k, void* out);

// One output tile: rows [0, n_rows) of w times columns [0, n_cols) of a,
// written to y[c * y_stride + r]. n_rows <= max_rows, n_cols <= max_cols of the
// kernel set that provides the function.
struct Tile {
    int64_t k;
    const uint8_t* w;
    size_t w_stride;
    int n_rows;
    const uint8_t* a;
    size_t a_stride;
    int n_cols;
    float* y;
    size_t y_stride;
};
using TileFn = void (*)(const Tile&);

struct TypeKernel {
    TileFn tile = nullptr;  // nullptr: this ISA has no kernel for the type
    int max_rows = 1;
    int max_cols = 1;
    ActivationFormat act = ActivationFormat::F32;  // what the tile function reads
};

ActivationFormat activation_format(ElementType t);

// The kernel of each ISA for weight type t ({nullptr} when it has none; the
// driver then falls back to the next lower ISA, down to scalar).
TypeKernel scalar_kernel(ElementType t);
TypeKernel avx2_kernel(ElementType t);
TypeKernel avx512_kernel(ElementType t);

// Rows16 of the 32-value block types (packing.h): a group's blocks go in
// pairs, [quants of b0][quants of b1][scales of b0][scales of b1], an odd
// last block alone; qbr = quant bytes of one block of 16 rows, sbr = scale
// bytes of one block of 16 rows (32: f16 scales; 16: MXFP4's E8M0). One stream.
inline size_t rows16_pair_base(int64_t b, size_t qbr, size_t sbr = 32) {
    return static_cast<size_t>(b / 2) * 2 * (qbr + sbr);
}
inline size_t rows16_quants_offset(int64_t b, size_t qbr, size_t sbr = 32) {
    return rows16_pair_base(b, qbr, sbr) + static_cast<size_t>(b % 2) * qbr;
}
inline size_t rows16_scales_offset(int64_t b, int64_t nb, size_t qbr, size_t sbr = 32) {
    const bool pair = b / 2 * 2 + 1 < nb;
    return rows16_pair_base(b, qbr, sbr) + (pair ? 2 : 1) * qbr + static_cast<size_t>(b % 2) * sbr;
}

// Kernels for packed weights (packing.h): the tile's w points at a group of
// packing_rows(p) rows, w_stride is the group's size in bytes, n_rows may be
// less than a group (the last one) and only those rows are written.
TypeKernel packed_scalar_kernel(ElementType t, Packing p);
TypeKernel packed_avx512_kernel(ElementType t, Packing p);
// Packed kernels for products of many columns (matrix x matrix): tiles of
// several groups (max_rows a multiple of packing_rows(p); a tile's groups
// follow each other, w_stride apart). {nullptr} for types without one.
TypeKernel packed_avx512_wide_kernel(ElementType t, Packing p);
// Q5_K and Q6_K Rows16 for many columns (packed_k_panel_avx512.cpp): panels
// of 48 rows x 64 columns, each super-block's quants unpacked once per
// panel. {nullptr} for other types.
TypeKernel packed_avx512_k_panel_kernel(ElementType t);
// BF16 Rows16 weights times BF16Pairs activations with AVX512-BF16's
// vdpbf16ps (packed_bf16_dot_avx512.cpp): 48-row tiles (three groups),
// {nullptr} where the compiler cannot build it. Use only where the CPU has
// AVX512-BF16.
TypeKernel packed_avx512_bf16_dot_kernel();
// Products with at least this many columns use the wide kernels.
constexpr int64_t kWideKernelMinColumns = 8;
// AMX kernels (amx_kernel_select.h) for Rows16 Q8_0, Q4_0, IQ4_NL and
// MXFP4 times Q8_0Planar activations and Q4_K, Q6_K, IQ4_XS times Q8_K: tiles of
// 32 rows x 32 columns, results bit-identical to the VNNI kernels. The
// hardware one runs only where best_isa() is Isa::Amx
// (packed_kernels_amx.cpp); the emulated one runs everywhere, for tests
// (packed_kernels_amx_emulated.cpp). {nullptr} for other types.
TypeKernel packed_amx_kernel(ElementType t, Packing p);
TypeKernel packed_amx_emulated_kernel(ElementType t, Packing p);
// The hardware kernel's AVX-512 half (its block math) on emulated tiles,
// for tests on machines with AVX-512 VNNI but no AMX.
TypeKernel packed_amx_emulated_tiles_avx512_math_kernel(ElementType t, Packing p);
// Products with at least this many columns use the AMX kernels (where the
// level is Isa::Amx): a tile multiply pays off once A holds 16 tokens.
constexpr int64_t kAmxKernelMinColumns = 16;
// For tests: while one lives, select_kernel gives the products that would
// use the AMX kernels the emulated ones instead, at every level, so the
// matmul driver's AMX path (tile walk, tasks, row ranges, threads) runs on
// machines without AMX. Process-wide; not while other threads run products.
class AmxEmulationScope {
public:
    AmxEmulationScope();
    ~AmxEmulationScope();
    AmxEmulationScope(const AmxEmulationScope&) = delete;
    AmxEmulationScope& operator=(const AmxEmulationScope&) = delete;

private:
    bool previous_;
};

// The kernel the products of `isa` use for type t in packing p: the highest
// level that has one (packed weights: AMX at the AMX level for 16+ columns,
// VNNI where the CPU has it, else the scalar reference, which reads every
// packing). matmul.cpp. n_cols: the product's activation vectors (wide and
// AMX kernels for many).
TypeKernel select_kernel(ElementType t, Isa isa, Packing packing, int64_t n_cols = 1);

}  // namespace cria::matmul::detail
