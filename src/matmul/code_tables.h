#pragma once
// 16-entry byte tables (4-bit code -> value + 128) for vpshufb lookups, shared
// by the AVX-512 row and packed kernels. Constant-initialised (constexpr), so
// no code of a kernel file runs before the CPU has been checked.

#include <cstdint>

#include "cria/quant/blocks.h"

namespace cria::matmul::detail {

struct CodeTables {
    alignas(16) uint8_t q4_0[16], iq4nl[16], mxfp4[16];
    constexpr CodeTables() : q4_0(), iq4nl(), mxfp4() {
        for (int i = 0; i < 16; ++i) {
            q4_0[i] = static_cast<uint8_t>(i - 8 + 128);
            iq4nl[i] = static_cast<uint8_t>(cria::quant::kvalues_iq4nl[i] + 128);
            mxfp4[i] = static_cast<uint8_t>(cria::quant::kvalues_mxfp4[i] + 128);
        }
    }
};

inline constexpr CodeTables kCodeTables;

}  // namespace cria::matmul::detail
