// The AVX-512 F32 -> F16 row conversion writes the same bits as the scalar
// f32_to_f16 for any float: random bit patterns (NaNs with payloads and
// signs, infinities, subnormals, values that overflow or round to the
// subnormal halves) in rows of awkward lengths, the masked tail included.

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "quant/codecs.h"

namespace cria::quant::detail {
namespace {

TEST(F16RowsAvx512, SameBitsAsScalarForAnyFloat) {
    if (!f16_rows_avx512_usable()) GTEST_SKIP() << "this CPU (or OS) has no usable AVX-512";
    std::mt19937 rng(11);
    for (int64_t n : {1, 15, 16, 17, 100, 1024, 4099}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (size_t i = 0; i < x.size(); ++i) {
            uint32_t u = rng();
            // A third of the values near the f16 range (exponents 100..150), so
            // that rounding, subnormal halves and overflow are all exercised.
            if (i % 3 == 0) u = (u & 0x807FFFFFu) | ((100u + u % 51u) << 23);
            x[i] = std::bit_cast<float>(u);
        }
        x[0] = std::bit_cast<float>(0xFFC12345u);  // a negative NaN with a payload
        std::vector<uint16_t> scalar(x.size() + 1, 0xABCD), simd(x.size() + 1, 0xABCD);
        quantize_f16_scalar(x.data(), scalar.data(), n);
        quantize_f16_avx512(x.data(), simd.data(), n);
        for (size_t i = 0; i < scalar.size(); ++i)
            ASSERT_EQ(scalar[i], simd[i]) << "value " << i << " of " << n << ": bits 0x" << std::hex
                                          << (i < x.size() ? std::bit_cast<uint32_t>(x[i]) : 0u);
    }
}

}  // namespace
}  // namespace cria::quant::detail
