// Scalar reference for packed weights: each row's blocks are gathered back
// out of the packing into the file's block form, then multiplied exactly as
// the scalar reference multiplies plain rows (same integers, same float
// order), so a packed product equals the plain scalar one bit for bit. The
// SIMD packed kernels are tested against this.

#include <cstring>
#include <type_traits>

#include "cria/core/float16.h"
#include "cria/quant/blocks.h"
#include "matmul/kernels.h"
#include "matmul/rows16_iq4_xs.h"
#include "matmul/scales.h"

namespace cria::matmul::detail {

using namespace cria::quant;

namespace {

constexpr int kGroupRows = 16;

// Block b of row r of a Rows16 group, in the file's form (its scale, f16 or
// E8M0, first; then its quants).
template <typename Block>
Block gather_rows16_block(const uint8_t* group, int64_t nb, int r, int64_t b) {
    constexpr size_t qb = sizeof(Block::qs), sb = sizeof(Block) - qb;
    const uint8_t flip = std::is_same_v<Block, block_q8_0> ? 0x80 : 0x00;
    const uint8_t* quants = group + rows16_quants_offset(b, kGroupRows * qb, kGroupRows * sb);
    const uint8_t* scales = group + rows16_scales_offset(b, nb, kGroupRows * qb, kGroupRows * sb);
    Block block;
    std::memcpy(reinterpret_cast<uint8_t*>(&block), scales + static_cast<size_t>(r) * sb, sb);
    auto* qs = reinterpret_cast<uint8_t*>(block.qs);
    for (size_t j = 0; j < qb / 4; ++j)
        for (size_t i = 0; i < 4; ++i) qs[4 * j + i] = static_cast<uint8_t>(quants[j * 64 + static_cast<size_t>(r) * 4 + i] ^ flip);
    return block;
}

template <typename Block, void (*Decode)(const Block&, int8_t*)>
void rows16_tile(const Tile& t) {
    const int64_t nb = t.k / 32;
    for (int c = 0; c < t.n_cols; ++c) {
        const uint8_t* act = t.a + static_cast<size_t>(c) * t.a_stride;
        const auto* aq = reinterpret_cast<const int8_t*>(act);
        const auto* ad = reinterpret_cast<const float*>(act + q8_0_planar_scale_offset(t.k));
        for (int r = 0; r < t.n_rows; ++r) {
            float sum = 0;
            for (int64_t b = 0; b < nb; ++b) {
                const Block block = gather_rows16_block<Block>(t.w, nb, r, b);
                int8_t q[32];
                Decode(block, q);
                int isum = 0;
                for (int j = 0; j < 32; ++j) isum += q[j] * aq[b * 32 + j];
                sum += static_cast<float>(isum) * (block_scale(block) * ad[b]);
            }
            t.y[static_cast<size_t>(c) * t.y_stride + static_cast<size_t>(r)] = sum;
        }
    }
}

// Super-block b of row r of a Rows16 Q4_K group (layout in packing.h).
SuperBlock gather_rows16_q4_k(const uint8_t* group, int r, int64_t b) {
    constexpr size_t kQuants = 2048, kScales = 256, kSuper = kQuants + kScales + 64;
    const uint8_t* s = group + static_cast<size_t>(b) * kSuper;
    SuperBlock sb;
    for (int reg = 0; reg < 32; ++reg) {
        const int j = reg / 8, t = reg % 8;
        for (int i = 0; i < 4; ++i) {
            const uint8_t byte = s[reg * 64 + r * 4 + i];
            sb.q[64 * j + 4 * t + i] = static_cast<int8_t>(byte & 0x0F);
            sb.q[64 * j + 32 + 4 * t + i] = static_cast<int8_t>(byte >> 4);
        }
    }
    for (int sub = 0; sub < 8; ++sub) {
        sb.scale[2 * sub] = sb.scale[2 * sub + 1] = s[kQuants + 16 * sub + r];
        sb.min[2 * sub] = sb.min[2 * sub + 1] = s[kQuants + 128 + 16 * sub + r];
    }
    f16_bits d, dmin;
    std::memcpy(&d, s + kQuants + kScales + 2 * r, 2);
    std::memcpy(&dmin, s + kQuants + kScales + 32 + 2 * r, 2);
    sb.d = f16_to_f32(d);
    sb.dmin = f16_to_f32(dmin);
    return sb;
}

// Super-block b of row r of a Rows16 Q5_K group (layout in packing.h): the
// Q4_K gathering plus the fifth bits, bit 2j (low nibble) and 2j + 1 (high
// nibble) of qh byte l for chunk j, as decode_superblock(block_q5_K) reads them.
SuperBlock gather_rows16_q5_k(const uint8_t* group, int r, int64_t b) {
    constexpr size_t kQuants = 2048, kHigh = 512, kScales = 256, kSuper = kQuants + kHigh + kScales + 64;
    const uint8_t* s = group + static_cast<size_t>(b) * kSuper;
    SuperBlock sb;
    for (int reg = 0; reg < 32; ++reg) {
        const int j = reg / 8, t = reg % 8;
        for (int i = 0; i < 4; ++i) {
            const uint8_t byte = s[reg * 64 + r * 4 + i];
            const uint8_t high = s[kQuants + t * 64 + r * 4 + i];  // qh byte 4t + i
            sb.q[64 * j + 4 * t + i] = static_cast<int8_t>((byte & 0x0F) | (((high >> (2 * j)) & 1) << 4));
            sb.q[64 * j + 32 + 4 * t + i] = static_cast<int8_t>((byte >> 4) | (((high >> (2 * j + 1)) & 1) << 4));
        }
    }
    const uint8_t* scales = s + kQuants + kHigh;
    for (int sub = 0; sub < 8; ++sub) {
        sb.scale[2 * sub] = sb.scale[2 * sub + 1] = scales[16 * sub + r];
        sb.min[2 * sub] = sb.min[2 * sub + 1] = scales[128 + 16 * sub + r];
    }
    f16_bits d, dmin;
    std::memcpy(&d, scales + kScales + 2 * r, 2);
    std::memcpy(&dmin, scales + kScales + 32 + 2 * r, 2);
    sb.d = f16_to_f32(d);
    sb.dmin = f16_to_f32(dmin);
    return sb;
}

// Super-block b of row r of a Rows16 Q6_K group, back in the file's form.
block_q6_K gather_rows16_q6_k(const uint8_t* group, int r, int64_t b) {
    constexpr size_t kQl = 2048, kQh = 1024, kScales = 256, kSuper = kQl + kQh + kScales + 64;
    const uint8_t* s = group + static_cast<size_t>(b) * kSuper;
    const size_t lane = static_cast<size_t>(r) * 4;
    block_q6_K blk;
    for (size_t reg = 0; reg < 32; ++reg) std::memcpy(blk.ql + 4 * reg, s + reg * 64 + lane, 4);
    for (size_t reg = 0; reg < 16; ++reg) std::memcpy(blk.qh + 4 * reg, s + kQl + reg * 64 + lane, 4);
    for (size_t i = 0; i < 16; ++i) blk.scales[i] = static_cast<int8_t>(s[kQl + kQh + i * 16 + static_cast<size_t>(r)]);
    std::memcpy(&blk.d, s + kQl + kQh + kScales + 2 * r, 2);
    return blk;
}

// Super-block b of row r of a Rows16 IQ4_XS group (layout in
// matmul/rows16_iq4_xs.h), as decode_superblock(block_iq4_xs) gives it.
SuperBlock gather_rows16_iq4_xs(const uint8_t* group, int r, int64_t b) {
    const uint8_t* s = group + static_cast<size_t>(b) * kIq4XsSuper;
    SuperBlock sb;
    for (int reg = 0; reg < 32; ++reg) {
        const int sub = reg / 4, t = reg % 4;
        for (int i = 0; i < 4; ++i) {
            const uint8_t byte = s[reg * 64 + r * 4 + i];
            sb.q[32 * sub + 4 * t + i] = kvalues_iq4nl[byte & 0x0F];
            sb.q[32 * sub + 16 + 4 * t + i] = kvalues_iq4nl[byte >> 4];
        }
    }
    for (int sub = 0; sub < 8; ++sub) {
        sb.scale[2 * sub] = sb.scale[2 * sub + 1] = static_cast<int8_t>(s[kIq4XsQuants + 16 * sub + r]);
        sb.min[2 * sub] = sb.min[2 * sub + 1] = 0;
    }
    f16_bits d;
    std::memcpy(&d, s + kIq4XsD + 2 * r, 2);
    sb.d = f16_to_f32(d);
    sb.dmin = 0.0f;
    return sb;
}

SuperBlock gather_superblock(ElementType type, const uint8_t* group, int r, int64_t b) {
    if (type == ElementType::Q4_K) return gather_rows16_q4_k(group, r, b);
    if (type == ElementType::Q5_K) return gather_rows16_q5_k(group, r, b);
    if (type == ElementType::IQ4_XS) return gather_rows16_iq4_xs(group, r, b);
    SuperBlock sb;
    decode_superblock(gather_rows16_q6_k(group, r, b), sb);
    return sb;
}

template <ElementType Type>
void rows16_superblock_tile(const Tile& t) {
    const int64_t nb = t.k / QK_K;
    for (int c = 0; c < t.n_cols; ++c) {
        const auto* y = reinterpret_cast<const block_q8_K*>(t.a + static_cast<size_t>(c) * t.a_stride);
        for (int r = 0; r < t.n_rows; ++r) {
            float sum = 0;
            for (int64_t b = 0; b < nb; ++b) sum += superblock_dot(gather_superblock(Type, t.w, r, b), y[b]);
            t.y[static_cast<size_t>(c) * t.y_stride + static_cast<size_t>(r)] = sum;
        }
    }
}

// F16/BF16: the plain reference's double sum, values read from the packing.
template <float (*ToFloat)(uint16_t)>
void rows16_half_tile(const Tile& t) {
    for (int c = 0; c < t.n_cols; ++c) {
        const auto* x = reinterpret_cast<const float*>(t.a + static_cast<size_t>(c) * t.a_stride);
        for (int r = 0; r < t.n_rows; ++r) {
            double s = 0;
            for (int64_t i = 0; i < t.k; ++i) {
                uint16_t h;
                std::memcpy(&h, t.w + (static_cast<size_t>(i) * kGroupRows + static_cast<size_t>(r)) * 2, 2);
                s += static_cast<double>(ToFloat(h)) * x[i];
            }
            t.y[static_cast<size_t>(c) * t.y_stride + static_cast<size_t>(r)] = static_cast<float>(s);
        }
    }
}

float half_to_float(uint16_t h) { return f16_to_f32(h); }
float bhalf_to_float(uint16_t h) { return bf16_to_f32(h); }

}  // namespace

TypeKernel packed_scalar_kernel(ElementType t, Packing p) {
    if (p != Packing::Rows16) return {};
    switch (t) {
        case ElementType::Q4_0: return {rows16_tile<block_q4_0, decode_q4_0>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::IQ4_NL:
            return {rows16_tile<block_iq4_nl, decode_iq4_nl>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::Q8_0: return {rows16_tile<block_q8_0, decode_q8_0>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::MXFP4:
            return {rows16_tile<block_mxfp4, decode_mxfp4>, kGroupRows, 4, ActivationFormat::Q8_0Planar};
        case ElementType::Q4_K: return {rows16_superblock_tile<ElementType::Q4_K>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::Q5_K: return {rows16_superblock_tile<ElementType::Q5_K>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::Q6_K: return {rows16_superblock_tile<ElementType::Q6_K>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::IQ4_XS:
            return {rows16_superblock_tile<ElementType::IQ4_XS>, kGroupRows, 4, ActivationFormat::Q8_K};
        case ElementType::F16: return {rows16_half_tile<half_to_float>, kGroupRows, 4, ActivationFormat::F32};
        case ElementType::BF16: return {rows16_half_tile<bhalf_to_float>, kGroupRows, 4, ActivationFormat::F32};
        default: return {};
    }
}

}  // namespace cria::matmul::detail
