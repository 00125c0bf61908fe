#pragma once
// Random weights and activations for the matmul tests: every quant bit
// pattern random, block scales moderate and finite, activations normal with a
// few outliers, as real ones have.

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/core/float16.h"

namespace cria::matmul::test {

using cria::ElementType;

inline size_t row_bytes(ElementType t, int64_t k) { return *cria::row_size_bytes(t, static_cast<uint64_t>(k)); }

// A scale in +-[0.002, 0.02], as f16 bits.
inline uint16_t random_scale(std::mt19937& rng, bool allow_negative = true) {
    std::uniform_real_distribution<float> mag(0.002f, 0.02f);
    float v = mag(rng);
    if (allow_negative && (rng() & 1)) v = -v;
    return cria::f32_to_f16(v);
}

inline void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Random weights: every quant bit pattern is random; the block scales are
// overwritten with moderate finite values so products stay well scaled.
inline std::vector<uint8_t> random_weights(ElementType t, int64_t rows, int64_t k, size_t stride, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> w(stride * static_cast<size_t>(rows) + 64);
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    const auto* info = cria::element_type_info(t);
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = w.data() + static_cast<size_t>(r) * stride;
        if (t == ElementType::F32) {
            for (int64_t i = 0; i < k; ++i) { float v = uni(rng); std::memcpy(row + 4 * i, &v, 4); }
            continue;
        }
        if (t == ElementType::F16 || t == ElementType::BF16) {
            for (int64_t i = 0; i < k; ++i)
                put16(row + 2 * i, t == ElementType::F16 ? cria::f32_to_f16(uni(rng)) : cria::f32_to_bf16(uni(rng)));
            continue;
        }
        const int64_t nb = k / info->block_size;
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t* blk = row + b * info->type_size;
            switch (t) {
                case ElementType::Q4_1: case ElementType::Q5_1:
                    put16(blk, random_scale(rng)); put16(blk + 2, random_scale(rng)); break;
                case ElementType::Q2_K: put16(blk + 80, random_scale(rng)); put16(blk + 82, random_scale(rng, false)); break;
                case ElementType::Q3_K: put16(blk + 108, random_scale(rng)); break;
                case ElementType::Q4_K: case ElementType::Q5_K:
                    put16(blk, random_scale(rng)); put16(blk + 2, random_scale(rng, false)); break;
                case ElementType::Q6_K: put16(blk + 208, random_scale(rng)); break;
                case ElementType::MXFP4: blk[0] = static_cast<uint8_t>(118 + rng() % 12); break;
                default: put16(blk, random_scale(rng)); break;  // d first: Q4_0 Q5_0 Q8_0 IQ4_NL IQ4_XS
            }
        }
    }
    return w;
}

inline std::vector<float> random_activations(int64_t n, int64_t stride, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n * stride));
    for (auto& v : x) v = normal(rng);
    // A few outliers, as real activations have.
    for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;
    return x;
}

}  // namespace cria::matmul::test
