#pragma once
// Float -> integer conversions with the exact results ggml's quantizers get,
// but defined for every input (NaN and overflow included), so that a tensor
// full of garbage quantizes to garbage instead of undefined behaviour.

#include <bit>
#include <cstdint>

namespace cria::quant::detail {

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 pushes the
// fraction out of the mantissa, whose low bits then hold the integer. This is
// ggml's nearest_int; for larger |x| or NaN it yields some bounded int (ggml
// asserts instead), which callers then clamp.
inline int nearest_int(float x) {
    const float shifted = x + 12582912.f;
    const int32_t bits = std::bit_cast<int32_t>(shifted);
    return (bits & 0x007fffff) - 0x00400000;
}

// C's (int)x as x86 computes it (cvttss2si): truncation toward zero, with
// INT32_MIN for NaN and out-of-range values instead of undefined behaviour.
inline int32_t truncate_to_int(float x) {
    if (!(x >= -2147483648.0f && x < 2147483648.0f)) return INT32_MIN;
    return static_cast<int32_t>(x);
}

// C's (int8_t)x / (uint8_t)x for a float x, as compiled on x86: truncate to
// 32 bits, then keep the low byte.
inline int8_t truncate_to_int8(float x) { return static_cast<int8_t>(truncate_to_int(x)); }
inline uint8_t truncate_to_uint8(float x) { return static_cast<uint8_t>(truncate_to_int(x)); }

}  // namespace cria::quant::detail
