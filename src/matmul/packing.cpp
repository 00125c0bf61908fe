// Weight packing (see cria/matmul/packing.h): which layouts exist, their
// sizes, and the transposition from the file's rows.

#include "cria/matmul/packing.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cria/core/error.h"
#include "cria/matmul/matmul.h"
#include "cria/quant/blocks.h"
#include "matmul/kernels.h"
#include "matmul/rows16_iq4_xs.h"
#include "matmul/scales.h"

namespace cria::matmul {

namespace {

constexpr int64_t kGroupRows = 16;

// Quant bytes per row and block in Rows16 (0: the type has no Rows16 form).
size_t rows16_quant_bytes(ElementType t) {
    switch (t) {
        case ElementType::Q4_0:
        case ElementType::IQ4_NL:
        case ElementType::MXFP4: return 16;
        case ElementType::Q8_0: return 32;
        default: return 0;
    }
}

// Scale bytes per row and block: an f16, or MXFP4's one E8M0 exponent (kept
// as it is, so the packed matrix takes exactly the file's bytes).
size_t rows16_scale_bytes(ElementType t) { return t == ElementType::MXFP4 ? 1 : 2; }

// The block's scale first, then its quant bytes, in all four types.
static_assert(offsetof(quant::block_q4_0, d) == 0 && offsetof(quant::block_q4_0, qs) == 2);
static_assert(offsetof(quant::block_iq4_nl, d) == 0 && offsetof(quant::block_iq4_nl, qs) == 2);
static_assert(offsetof(quant::block_q8_0, d) == 0 && offsetof(quant::block_q8_0, qs) == 2);
static_assert(offsetof(quant::block_mxfp4, e) == 0 && offsetof(quant::block_mxfp4, qs) == 1);

// Packs a super-block type: for each group of 16 rows (zero rows padding
// the last) and each super-block b, `put(sb, r, block)` writes row r's block
// b into the group's super-block run `sb` of `super_bytes`.
template <typename Block, typename Put>
void pack_rows16_superblocks(const WeightMatrix& w, uint8_t* dst, size_t super_bytes, Put put) {
    const int64_t nb = w.k / 256;
    const int64_t groups = (w.rows + kGroupRows - 1) / kGroupRows;
    const auto* src = static_cast<const uint8_t*>(w.data);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t* group = dst + static_cast<size_t>(g * nb) * super_bytes;
        std::memset(group, 0, static_cast<size_t>(nb) * super_bytes);  // padding rows: all zero
        const int64_t rows = std::min(kGroupRows, w.rows - g * kGroupRows);
        for (int64_t r = 0; r < rows; ++r) {
            const auto* row = reinterpret_cast<const Block*>(src + static_cast<size_t>(g * kGroupRows + r) * w.row_stride);
            for (int64_t b = 0; b < nb; ++b) put(group + static_cast<size_t>(b) * super_bytes, static_cast<size_t>(r), row[b]);
        }
    }
}

// Rows16 of Q4_K: per super-block of 256 values, the 16 rows' quants (32
// registers: register 8j + t holds, for row r at 4r, bytes 32j + 4t..+3 of
// the row's qs), their 6-bit sub-block scales and mins unpacked to bytes
// (8 x 16 scales, then 8 x 16 mins: sub-block s of row r at 16s + r), and the
// 16 d then the 16 dmin as f16. One run of 2368 bytes (37 cache lines).
constexpr size_t kQ4KQuants = 2048, kQ4KScales = 256, kQ4KSuper = kQ4KQuants + kQ4KScales + 64;

void pack_rows16_q4_k(const WeightMatrix& w, uint8_t* dst) {
    pack_rows16_superblocks<quant::block_q4_K>(w, dst, kQ4KSuper, [](uint8_t* sb, size_t r, const quant::block_q4_K& blk) {
        for (size_t reg = 0; reg < 32; ++reg) std::memcpy(sb + reg * 64 + r * 4, blk.qs + 4 * reg, 4);
        uint8_t sm[16];  // 8 scales, then 8 mins
        detail::scales_mins_k4(blk.scales, sm);
        for (size_t i = 0; i < 16; ++i) sb[kQ4KQuants + i * 16 + r] = sm[i];
        std::memcpy(sb + kQ4KQuants + kQ4KScales + 2 * r, &blk.d, 2);
        std::memcpy(sb + kQ4KQuants + kQ4KScales + 32 + 2 * r, &blk.dmin, 2);
    });
}

// Rows16 of Q5_K: Q4_K's layout with the fifth bits between the quants and
// the scales: qh as 8 registers (register t holds bytes 4t..4t+3 of each
// row's qh, row r at 4r; bit 2j of a byte is the fifth bit of its low-nibble
// value in chunk j, bit 2j + 1 that of its high-nibble one). One run of 2880
// bytes (45 cache lines), 64 bytes per 16 rows more than the file.
constexpr size_t kQ5KHigh = 512, kQ5KSuper = kQ4KQuants + kQ5KHigh + kQ4KScales + 64;

void pack_rows16_q5_k(const WeightMatrix& w, uint8_t* dst) {
    pack_rows16_superblocks<quant::block_q5_K>(w, dst, kQ5KSuper, [](uint8_t* sb, size_t r, const quant::block_q5_K& blk) {
        for (size_t reg = 0; reg < 32; ++reg) std::memcpy(sb + reg * 64 + r * 4, blk.qs + 4 * reg, 4);
        for (size_t reg = 0; reg < 8; ++reg) std::memcpy(sb + kQ4KQuants + reg * 64 + r * 4, blk.qh + 4 * reg, 4);
        uint8_t sm[16];  // 8 scales, then 8 mins
        detail::scales_mins_k4(blk.scales, sm);
        uint8_t* scales = sb + kQ4KQuants + kQ5KHigh;
        for (size_t i = 0; i < 16; ++i) scales[i * 16 + r] = sm[i];
        std::memcpy(scales + kQ4KScales + 2 * r, &blk.d, 2);
        std::memcpy(scales + kQ4KScales + 32 + 2 * r, &blk.dmin, 2);
    });
}

// Rows16 of Q6_K: per super-block, the 16 rows' ql as 32 registers and qh
// as 16 (register t holds bytes 4t..4t+3 of each row, row r at 4r), their
// 16 int8 scales (sub-block g of row r at 16g + r), their d as f16, and 32
// bytes of padding so that every super-block starts on a cache line.
constexpr size_t kQ6KQl = 2048, kQ6KQh = 1024, kQ6KScales = 256, kQ6KSuper = kQ6KQl + kQ6KQh + kQ6KScales + 64;

void pack_rows16_q6_k(const WeightMatrix& w, uint8_t* dst) {
    pack_rows16_superblocks<quant::block_q6_K>(w, dst, kQ6KSuper, [](uint8_t* sb, size_t r, const quant::block_q6_K& blk) {
        for (size_t reg = 0; reg < 32; ++reg) std::memcpy(sb + reg * 64 + r * 4, blk.ql + 4 * reg, 4);
        for (size_t reg = 0; reg < 16; ++reg) std::memcpy(sb + kQ6KQl + reg * 64 + r * 4, blk.qh + 4 * reg, 4);
        for (size_t i = 0; i < 16; ++i) sb[kQ6KQl + kQ6KQh + i * 16 + r] = static_cast<uint8_t>(blk.scales[i]);
        std::memcpy(sb + kQ6KQl + kQ6KQh + kQ6KScales + 2 * r, &blk.d, 2);
    });
}

// Rows16 of IQ4_XS (layout in matmul/rows16_iq4_xs.h).
void pack_rows16_iq4_xs(const WeightMatrix& w, uint8_t* dst) {
    using detail::kIq4XsD, detail::kIq4XsQuants;
    pack_rows16_superblocks<quant::block_iq4_xs>(w, dst, detail::kIq4XsSuper, [](uint8_t* sb, size_t r, const quant::block_iq4_xs& blk) {
        for (size_t reg = 0; reg < 32; ++reg) std::memcpy(sb + reg * 64 + r * 4, blk.qs + 4 * reg, 4);
        for (size_t s = 0; s < 8; ++s) {
            const int ls = ((blk.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F) | (((blk.scales_h >> (2 * s)) & 3) << 4);
            sb[kIq4XsQuants + 16 * s + r] = static_cast<uint8_t>(static_cast<int8_t>(ls - 32));
        }
        std::memcpy(sb + kIq4XsD + 2 * r, &blk.d, 2);
    });
}

bool is_half(ElementType t) { return t == ElementType::F16 || t == ElementType::BF16; }

bool has_rows16(ElementType t) {
    return rows16_quant_bytes(t) != 0 || t == ElementType::Q4_K || t == ElementType::Q5_K || t == ElementType::Q6_K ||
           t == ElementType::IQ4_XS || is_half(t);
}

// Rows16 of F16/BF16: for each k, the 16 rows' values (32 bytes).
void pack_rows16_half(const WeightMatrix& w, uint8_t* dst) {
    const int64_t groups = (w.rows + kGroupRows - 1) / kGroupRows;
    const size_t group_bytes = static_cast<size_t>(w.k) * kGroupRows * 2;
    const auto* src = static_cast<const uint8_t*>(w.data);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t* group = dst + static_cast<size_t>(g) * group_bytes;
        std::memset(group, 0, group_bytes);  // padding rows: zeros
        const int64_t rows = std::min(kGroupRows, w.rows - g * kGroupRows);
        for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* row = src + static_cast<size_t>(g * kGroupRows + r) * w.row_stride;
            for (int64_t i = 0; i < w.k; ++i)
                std::memcpy(group + (static_cast<size_t>(i) * kGroupRows + static_cast<size_t>(r)) * 2, row + 2 * i, 2);
        }
    }
}

}  // namespace

int64_t packing_rows(Packing p) { return p == Packing::Rows16 ? kGroupRows : 1; }

Packing preferred_packing(ElementType t, cpu::Isa isa) {
    // Only the VNNI kernels read Rows16 faster than rows; the scalar
    // reference reads it too, but slower than it reads rows.
    if (isa >= cpu::Isa::Avx512Vnni && has_rows16(t)) return Packing::Rows16;
    return Packing::None;
}

bool supports_packing(ElementType t, Packing p) {
    return p == Packing::None || (p == Packing::Rows16 && has_rows16(t));
}

size_t packed_group_bytes(ElementType t, int64_t k, Packing p) {
    if (p == Packing::None) return row_size_bytes(t, static_cast<uint64_t>(k)).value_or(0);
    if (p == Packing::Rows16 && t == ElementType::Q4_K)
        return k > 0 && k % 256 == 0 ? static_cast<size_t>(k / 256) * kQ4KSuper : 0;
    if (p == Packing::Rows16 && t == ElementType::Q5_K)
        return k > 0 && k % 256 == 0 ? static_cast<size_t>(k / 256) * kQ5KSuper : 0;
    if (p == Packing::Rows16 && t == ElementType::Q6_K)
        return k > 0 && k % 256 == 0 ? static_cast<size_t>(k / 256) * kQ6KSuper : 0;
    if (p == Packing::Rows16 && t == ElementType::IQ4_XS)
        return k > 0 && k % 256 == 0 ? static_cast<size_t>(k / 256) * detail::kIq4XsSuper : 0;
    if (p == Packing::Rows16 && is_half(t)) return k > 0 ? static_cast<size_t>(k) * kGroupRows * 2 : 0;
    const size_t qb = rows16_quant_bytes(t);
    if (qb == 0 || k <= 0 || k % 32 != 0) return 0;
    return static_cast<size_t>(k / 32) * kGroupRows * (qb + rows16_scale_bytes(t));
}

size_t packed_bytes(ElementType t, int64_t rows, int64_t k, Packing p) {
    const int64_t group = packing_rows(p);
    return static_cast<size_t>((rows + group - 1) / group) * packed_group_bytes(t, k, p);
}

void pack_weights(const WeightMatrix& w, Packing p, void* out) {
    const auto fail = [](const std::string& why) { throw Error("pack_weights: " + why); };
    if (w.packing != Packing::None) fail("the source matrix is already packed");
    if (!supports_packing(w.type, p) || p == Packing::None)
        fail(std::string("no packed layout for ") + std::string(element_type_name(w.type)));
    if (w.rows <= 0 || packed_group_bytes(w.type, w.k, p) == 0) fail("rows must be whole blocks");
    const auto row_bytes = row_size_bytes(w.type, static_cast<uint64_t>(w.k));
    if (!row_bytes || (w.rows > 1 && w.row_stride < *row_bytes)) fail("row stride is smaller than a row");
    if (w.type == ElementType::Q4_K) return pack_rows16_q4_k(w, static_cast<uint8_t*>(out));
    if (w.type == ElementType::Q5_K) return pack_rows16_q5_k(w, static_cast<uint8_t*>(out));
    if (w.type == ElementType::Q6_K) return pack_rows16_q6_k(w, static_cast<uint8_t*>(out));
    if (w.type == ElementType::IQ4_XS) return pack_rows16_iq4_xs(w, static_cast<uint8_t*>(out));
    if (is_half(w.type)) return pack_rows16_half(w, static_cast<uint8_t*>(out));

    const size_t qb = rows16_quant_bytes(w.type), sb = rows16_scale_bytes(w.type);
    const size_t block_bytes = sb + qb;  // the file's block: scale, quants
    const int64_t nb = w.k / 32;
    const size_t group_bytes = packed_group_bytes(w.type, w.k, p);
    // Q8_0's signed quants become unsigned (+ 128) for vpdpbusd.
    const uint8_t flip = w.type == ElementType::Q8_0 ? 0x80 : 0x00;
    const auto* src = static_cast<const uint8_t*>(w.data);
    auto* dst = static_cast<uint8_t*>(out);
    const int64_t groups = (w.rows + kGroupRows - 1) / kGroupRows;
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t* group = dst + static_cast<size_t>(g) * group_bytes;
        std::memset(group, 0, group_bytes);  // padding rows: zero scales and quants
        const int64_t rows = std::min(kGroupRows, w.rows - g * kGroupRows);
        for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* row = src + static_cast<size_t>(g * kGroupRows + r) * w.row_stride;
            for (int64_t b = 0; b < nb; ++b) {
                const uint8_t* block = row + static_cast<size_t>(b) * block_bytes;
                const size_t qbr = kGroupRows * qb, sbr = kGroupRows * sb;
                std::memcpy(group + detail::rows16_scales_offset(b, nb, qbr, sbr) + static_cast<size_t>(r) * sb, block, sb);
                uint8_t* q = group + detail::rows16_quants_offset(b, qbr, sbr);
                for (size_t j = 0; j < qb / 4; ++j)
                    for (size_t i = 0; i < 4; ++i)
                        q[j * 64 + static_cast<size_t>(r) * 4 + i] = static_cast<uint8_t>(block[sb + 4 * j + i] ^ flip);
            }
        }
    }
}

}  // namespace cria::matmul
