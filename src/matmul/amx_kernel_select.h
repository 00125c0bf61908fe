#pragma once
// The AMX kernel of each weight type, for a tile policy and a block math
// policy (amx_kernel.h, amx_kernel_q4_k.h, amx_kernel_q6_k.h, amx_kernel_iq4_xs.h): the hardware pair in
// packed_kernels_amx.cpp, the emulated pair in packed_kernels_amx_emulated.cpp.

#include "matmul/amx_kernel.h"
#include "matmul/amx_kernel_iq4_xs.h"
#include "matmul/amx_kernel_q4_k.h"
#include "matmul/amx_kernel_q6_k.h"
#include "matmul/kernels.h"

namespace cria::matmul::detail {

// {nullptr} for the types and packings without an AMX kernel.
template <class Tiles, class Math>
TypeKernel amx_kernel_for(ElementType t, Packing p) {
    if (p != Packing::Rows16) return {};
    const auto blocks32 = [](TileFn f) { return TypeKernel{f, 32, 32, ActivationFormat::Q8_0Planar}; };
    switch (t) {
        case ElementType::Q8_0: return blocks32(AmxBlocks32<Tiles, Math, AmxQ8_0>::run);
        case ElementType::Q4_0: return blocks32(AmxBlocks32<Tiles, Math, AmxQ4_0>::run);
        case ElementType::IQ4_NL: return blocks32(AmxBlocks32<Tiles, Math, AmxIq4Nl>::run);
        case ElementType::MXFP4: return blocks32(AmxBlocks32<Tiles, Math, AmxMxfp4>::run);
        case ElementType::Q4_K: return {AmxQ4K<Tiles, Math>::run, 32, 32, ActivationFormat::Q8_K};
        case ElementType::Q6_K: return {AmxQ6K<Tiles, Math>::run, 32, 32, ActivationFormat::Q8_K};
        case ElementType::IQ4_XS: return {AmxIq4Xs<Tiles, Math>::run, 32, 32, ActivationFormat::Q8_K};
        default: return {};
    }
}

}  // namespace cria::matmul::detail
