#pragma once
// Weight packing: a weight matrix rearranged once, at load time, into the
// layout a SIMD kernel reads fastest. The file's layout keeps each row's
// blocks together; a matrix x vector kernel that reads one row at a time must
// then decode every block on its own and reduce every row separately. The
// packed layout interleaves 16 rows so that one vpdpbusd computes 4 products
// for each of the 16 rows, the output of a block is one register of 16 row
// sums, and the weights stream from memory in a single sequential run.
//
// Rows16 (Q4_0, IQ4_NL, Q8_0, MXFP4): rows are grouped by 16 (the last group padded
// with zero rows). For block b of a group,
//   quants: QB/4 registers of 64 bytes (QB = 16 quant bytes per block for the
//           4-bit types, 32 for Q8_0); register j holds, for row r = 0..15,
//           bytes 4j..4j+3 of that row's block b at 4r. Q8_0's quants are
//           stored + 128 (unsigned), the nibble types as in the file (low
//           nibble value i, high nibble value i + 16).
//   scales: the 16 rows' f16 scales (32 bytes); MXFP4: their E8M0
//           exponents as in the file (16 bytes).
// Blocks go in pairs, [quants b0][quants b1][scales b0][scales b1] (an odd
// last block alone), so the kernel reads one sequential stream whose
// prefetching runs on into the next group. A group takes exactly 16 rows'
// bytes of the file's layout.
//
// Rows16 (Q4_K): per super-block of 256 values, one run of 2368 bytes: the
// quants as 32 registers (register 8j + t holds bytes 32j + 4t..+3 of each
// row's qs, row r at 4r: low nibbles are values 64j + 4t.., high nibbles
// 64j + 32 + 4t..), the 8 sub-block scales and 8 mins unpacked to bytes
// (sub-block s of row r at 16s + r; mins after the scales), then the rows'
// d and dmin as f16. That is 64 bytes per 16 rows more than the file (+2.8%),
// for scales the kernel can load instead of unpack.
//
// Rows16 (Q5_K): per super-block of 256 values, one run of 2880 bytes:
// Q4_K's quant registers, then the rows' qh as 8 registers (register t holds
// bytes 4t..4t+3 of each row's qh, row r at 4r), then Q4_K's unpacked scales
// and mins and the f16 d and dmin. 64 bytes per 16 rows more than the file.
//
// Rows16 (Q6_K): per super-block of 256 values, one run of 3392 bytes: the
// rows' ql as 32 registers and qh as 16 (register t holds bytes 4t..4t+3 of
// each row, row r at 4r), the 16 int8 sub-block scales (sub-block g of row
// r at 16g + r), the rows' d as f16 and 32 bytes of padding (+1%), so that
// every super-block starts on a cache line.
//
// Rows16 (IQ4_XS): per super-block of 256 values, one run of 2240 bytes
// (matmul/rows16_iq4_xs.h): the quants as 32 registers (register 4s + t
// holds bytes 16s + 4t..+3 of each row's qs, row r at 4r: low nibbles are
// values 32s + 4t.., high nibbles 32s + 16 + 4t..), the 8 sub-block scales
// ls - 32 as int8 (sub-block s of row r at 16s + r), the rows' d as f16 and
// 32 bytes of padding: 64 bytes per 16 rows more than the file (+2.9%), so
// that the kernel loads the scales instead of unpacking 6-bit fields and
// every super-block starts on a cache line.
//
// Rows16 (F16, BF16): for each k, the 16 rows' values (32 bytes), so one
// load is one value of 16 rows and the kernel multiplies it with one
// broadcast activation: no horizontal sums, one sequential stream.

#include <cstddef>
#include <cstdint>

#include "cria/core/element_type.h"
#include "cria/cpu/features.h"

namespace cria::matmul {

enum class Packing : uint8_t {
    None,    // rows as the file stores them
    Rows16,  // 16 interleaved rows (see above): Q4_0, IQ4_NL, Q8_0, MXFP4, Q4_K, Q5_K, Q6_K, IQ4_XS, F16, BF16
};

struct WeightMatrix;

// Rows per group of a packing (1 for None).
int64_t packing_rows(Packing p);

// The packing that the kernels of `isa` multiply fastest for type t (None
// where packing does not pay or no packed kernel exists).
Packing preferred_packing(ElementType t, cpu::Isa isa);

// Whether matmul can read type t in packing p (on some ISA; the scalar
// reference reads every packing it accepts).
bool supports_packing(ElementType t, Packing p);

// Bytes of one group of packing_rows(p) rows of k values.
size_t packed_group_bytes(ElementType t, int64_t k, Packing p);

// Bytes of the packed form of a rows x k matrix.
size_t packed_bytes(ElementType t, int64_t rows, int64_t k, Packing p);

// Writes the packed form of `w` (plain rows, w.packing == None) to `out`
// (packed_bytes(...) bytes; 64-byte alignment recommended). Throws
// cria::Error when the type cannot be packed so.
void pack_weights(const WeightMatrix& w, Packing p, void* out);

}  // namespace cria::matmul
