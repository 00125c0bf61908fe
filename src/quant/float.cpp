// Plain float element types: F32 (a copy), F16 and BF16 (round to nearest even,
// with the bit-exact conversions of cria/core/float16.h).

#include <cstring>

#include "cria/core/float16.h"
#include "quant/codecs.h"

namespace cria::quant::detail {

void dequantize_f32(const void* src, float* dst, int64_t n) {
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f32(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const f16_bits*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
}

void quantize_f16_scalar(const float* src, void* dst, int64_t n) {
    auto* h = static_cast<f16_bits*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
}

void quantize_f16(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    static const bool simd = f16_rows_avx512_usable();
    if (simd) quantize_f16_avx512(src, dst, n);
    else quantize_f16_scalar(src, dst, n);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const bf16_bits*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n, const float* /*importance*/) {
    auto* h = static_cast<bf16_bits*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

}  // namespace cria::quant::detail
