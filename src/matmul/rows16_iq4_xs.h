#pragma once
// Rows16 of IQ4_XS: the byte layout of one super-block (256 values) of a
// group of 16 rows, shared by the packing (packing.cpp), the scalar
// reference (packed_kernels_scalar.cpp) and the VNNI kernels
// (packed_kernels_iq4_xs_avx512.cpp) and the AMX kernel (amx_kernel_iq4_xs.h).
//
// - quants, 32 registers of 64 bytes: register 4s + t holds, for row r at
//   bytes 4r..4r+3, the row's qs bytes 16s + 4t..16s + 4t + 3. Their low
//   nibbles are values 4t..4t+3 of 32-value sub-block s, their high nibbles
//   values 16 + 4t..16 + 4t + 3, so one register gives two vpdpbusd operands
//   after the code-book lookup (vpshufb) and nothing is reordered per element.
// - scales, 8 x 16 int8: sub-block s of row r at 16s + r holds ls - 32 (the
//   file's 6-bit scale, unbiased), ready for vpmovsxbd: no bit surgery on the
//   6-bit fields in the inner loop.
// - d: the 16 rows' f16 super-block scales.
// - 32 zero bytes, so that every super-block starts on a cache line.
// One run of 2240 bytes (35 cache lines) against the file's 16 x 136 = 2176:
// 2.9% more bytes for matrix x vector to read.

#include <cstddef>

#include "matmul/kernels.h"

namespace cria::matmul::detail {

constexpr size_t kIq4XsQuants = 2048;                     // offset of the scales
constexpr size_t kIq4XsScales = 128;                      // bytes of scales
constexpr size_t kIq4XsD = kIq4XsQuants + kIq4XsScales;  // offset of the 16 d
constexpr size_t kIq4XsSuper = kIq4XsD + 32 + 32;         // bytes per super-block of 16 rows
static_assert(kIq4XsSuper % 64 == 0);

// The VNNI kernels (packed_kernels_iq4_xs_avx512.cpp) for a few columns
// (16-row tiles) and for many (32-row tiles, kWideKernelMinColumns and up).
// Bit-identical to each other and to the packed scalar reference. {nullptr}
// where the compiler cannot build them.
TypeKernel packed_avx512_iq4_xs_kernel();
TypeKernel packed_avx512_iq4_xs_wide_kernel();

}  // namespace cria::matmul::detail
