// Packed weights (cria/matmul/packing.h): the packed scalar reference equals
// the plain scalar reference bit for bit (it multiplies the same blocks in the
// same order), and every SIMD level's packed kernel stays within the bound of
// matmul_test.cpp (1e-5 * sum |w x|: same integer block sums, only the float
// accumulation differs) on random data of awkward sizes, including a last
// group that is not full. NaN never passes (checks are `diff <= bound`).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cria/core/error.h"
#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"
#include "cria/matmul/packing.h"
#include "cria/quant/blocks.h"
#include "cria/quant/quantize.h"
#include "matmul/kernels.h"
#include "random_data.h"

namespace {

using cria::ElementType;
using cria::cpu::Isa;
namespace mm = cria::matmul;
using namespace cria::matmul::test;

// Whether BF16 products at `isa` use the vdpbf16ps kernel (bf16 activations).
bool bf16_dot_kernel_at(ElementType t, Isa isa) {
    return t == ElementType::BF16 && isa >= Isa::Avx512Vnni && cria::cpu::cpu_features().avx512_bf16;
}

// Products of this many columns or more use the wide kernels.
constexpr int64_t kWide = mm::detail::kWideKernelMinColumns;

const ElementType kPackable[] = {ElementType::Q4_0, ElementType::IQ4_NL, ElementType::Q8_0, ElementType::MXFP4,
                                 ElementType::Q4_K, ElementType::Q5_K, ElementType::Q6_K, ElementType::F16,
                                 ElementType::BF16, ElementType::IQ4_XS};

struct PackedProblem {
    ElementType type;
    int64_t rows, k, n;
    size_t w_stride;
    int64_t x_stride, y_stride;
    std::vector<uint8_t> w, packed;
    std::vector<float> x;

    PackedProblem(ElementType t, int64_t rows_, int64_t k_, int64_t n_, uint32_t seed)
        : type(t), rows(rows_), k(k_), n(n_), w_stride(row_bytes(t, k_) + 8), x_stride(k_ + 3), y_stride(rows_ + 5),
          w(random_weights(t, rows_, k_, w_stride, seed)),
          packed(mm::packed_bytes(t, rows_, k_, mm::Packing::Rows16)),
          x(random_activations(n_, x_stride, seed + 1)) {
        mm::pack_weights(plain_matrix(), mm::Packing::Rows16, packed.data());
    }
    mm::WeightMatrix plain_matrix() const { return {type, w.data(), rows, k, w_stride}; }
    mm::WeightMatrix packed_matrix() const { return {type, packed.data(), rows, k, 0, mm::Packing::Rows16}; }

    std::vector<float> run(const mm::WeightMatrix& m, Isa isa, cria::cpu::ThreadPool* pool = nullptr, int64_t r0 = 0,
                           int64_t r1 = -1) const {
        std::vector<float> y(static_cast<size_t>(n * y_stride), -12345.0f);
        mm::MatmulArgs a;
        a.w = m;
        a.x = x.data();
        a.n = n;
        a.x_stride = x_stride;
        a.y = y.data();
        a.y_stride = y_stride;
        a.r0 = r0;
        a.r1 = r1 < 0 ? rows : r1;
        mm::matmul(a, isa, pool);
        return y;
    }
    // sum_i |w_i x_i| of row r and column c, in double.
    double magnitude(int64_t r, int64_t c) const {
        std::vector<float> f(static_cast<size_t>(k));
        cria::quant::dequantize_row(type, w.data() + static_cast<size_t>(r) * w_stride, f.data(), k);
        double s = 0;
        for (int64_t i = 0; i < k; ++i) s += std::fabs(static_cast<double>(f[i]) * x[c * x_stride + i]);
        return s;
    }
    // Row r times column c with the activations rounded to bf16 first (the
    // BF16 dot-product kernel's inputs), in double; and sum |w x| of those.
    std::pair<double, double> bf16_activation_dot(int64_t r, int64_t c) const {
        std::vector<float> f(static_cast<size_t>(k));
        cria::quant::dequantize_row(type, w.data() + static_cast<size_t>(r) * w_stride, f.data(), k);
        double s = 0, m = 0;
        for (int64_t i = 0; i < k; ++i) {
            const double xi = cria::bf16_to_f32(cria::f32_to_bf16(x[static_cast<size_t>(c * x_stride + i)]));
            s += static_cast<double>(f[i]) * xi;
            m += std::fabs(static_cast<double>(f[i]) * xi);
        }
        return {s, m};
    }
    std::string describe(Isa isa, int64_t r, int64_t c) const {
        return std::string(cria::element_type_name(type)) + " " + std::string(cria::cpu::isa_name(isa)) +
               " rows=" + std::to_string(rows) + " k=" + std::to_string(k) + " n=" + std::to_string(n) + " at row " +
               std::to_string(r) + " col " + std::to_string(c);
    }
};

struct Shape { int64_t rows, k, n; };
// Rows around the group size (1, 7, 15, 16, 17, 31, 33, 257), short and long
// rows, matrix x vector and small batches.
// From 8 columns on, the wide (32-row) kernels run: {49, 160, 11} ends in a
// tile of one group, {33, 4096, 9} in a tile of 1 row after a full one.
// Q5_K's wide kernel takes 8 columns a tile: 12 to 15 columns end in
// tiles of 4 to 7 of them.
const Shape kShapes[] = {{1, 32, 1},  {7, 64, 2},  {15, 96, 3}, {16, 256, 1}, {17, 32, 5},
                         {31, 512, 4}, {33, 160, 7}, {257, 64, 16}, {33, 4096, 1}, {16, 4096, 3},
                         {49, 160, 11}, {33, 4096, 9}, {31, 256, 12}, {17, 512, 13}, {16, 256, 14}, {33, 768, 15}};

// Super-block types need k in whole 256-value super-blocks.
std::vector<Shape> shapes_for(ElementType t) {
    std::vector<Shape> out;
    for (Shape s : kShapes) {
        if (t == ElementType::Q4_K || t == ElementType::Q5_K || t == ElementType::Q6_K || t == ElementType::IQ4_XS)
            s.k = (s.k + 255) / 256 * 256;
        out.push_back(s);
    }
    if (t == ElementType::F16 || t == ElementType::BF16)  // any row length: odd ones too
        for (Shape s : {Shape{17, 1, 1}, Shape{33, 7, 2}, Shape{16, 31, 1}, Shape{20, 257, 3}, Shape{5, 4097, 1},
                        Shape{40, 257, 10}, Shape{33, 3, 8}})
            out.push_back(s);
    return out;
    return out;
}

class PackedTypes : public ::testing::TestWithParam<ElementType> {};

TEST_P(PackedTypes, ScalarPackedEqualsScalarPlain) {
    uint32_t seed = 100;
    for (const Shape& s : shapes_for(GetParam())) {
        const PackedProblem p(GetParam(), s.rows, s.k, s.n, seed++);
        const std::vector<float> plain = p.run(p.plain_matrix(), Isa::Scalar);
        const std::vector<float> packed = p.run(p.packed_matrix(), Isa::Scalar);
        for (int64_t c = 0; c < p.n; ++c)
            for (int64_t r = 0; r < p.y_stride; ++r) {
                // Bit-identical, and the rows past the matrix are left alone.
                const size_t i = static_cast<size_t>(c * p.y_stride + r);
                ASSERT_EQ(packed[i], plain[i]) << p.describe(Isa::Scalar, r, c);
            }
    }
}

TEST_P(PackedTypes, EveryLevelMatchesScalarReference) {
    uint32_t seed = 200;
    for (const Shape& s : shapes_for(GetParam())) {
        const PackedProblem p(GetParam(), s.rows, s.k, s.n, seed++);
        const std::vector<float> ref = p.run(p.plain_matrix(), Isa::Scalar);
        for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Amx}) {
            if (!cria::cpu::isa_supported(isa)) continue;
            const std::vector<float> got = p.run(p.packed_matrix(), isa);
            for (int64_t c = 0; c < p.n; ++c) {
                for (int64_t r = 0; r < p.rows; ++r) {
                    const size_t i = static_cast<size_t>(c * p.y_stride + r);
                    if (bf16_dot_kernel_at(p.type, isa)) {
                        // ggml's math for BF16: activations rounded to bf16, exact
                        // products, f32 sums (up to two roundings per instruction).
                        const auto [want, mag] = p.bf16_activation_dot(r, c);
                        const double diff = std::fabs(static_cast<double>(got[i]) - want);
                        ASSERT_TRUE(diff <= static_cast<double>(p.k) * 0x1p-23 * mag + 1e-6)
                            << p.describe(isa, r, c) << ": " << got[i] << " vs " << want;
                        continue;
                    }
                    // Float types: a float sum against the reference's double one.
                    const bool is_float = p.type == ElementType::F16 || p.type == ElementType::BF16;
                    const double bound = (is_float ? static_cast<double>(p.k) * 0x1p-24 : 1e-5) * p.magnitude(r, c) + 1e-6;
                    const double diff = std::fabs(static_cast<double>(got[i]) - ref[i]);
                    ASSERT_TRUE(diff <= bound) << p.describe(isa, r, c) << ": " << got[i] << " vs " << ref[i];
                }
                for (int64_t r = p.rows; r < p.y_stride; ++r)  // padding rows are never written
                    ASSERT_EQ(got[static_cast<size_t>(c * p.y_stride + r)], -12345.0f) << p.describe(isa, r, c);
            }
        }
    }
}

TEST_P(PackedTypes, ThreadsGiveIdenticalBits) {
    cria::cpu::ThreadPool pool(2);
    const PackedProblem p(GetParam(), 257, 512, 3, 7);
    const std::vector<float> one = p.run(p.packed_matrix(), cria::cpu::best_isa());
    const std::vector<float> two = p.run(p.packed_matrix(), cria::cpu::best_isa(), &pool);
    ASSERT_EQ(one.size(), two.size());
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], two[i]) << i;
}

// The same with enough columns for the wide kernels.
TEST_P(PackedTypes, ThreadsGiveIdenticalBitsWide) {
    cria::cpu::ThreadPool pool(2);
    const PackedProblem p(GetParam(), 257, 1536, 2 * kWide + 3, 8);  // long rows: 48 blocks
    const std::vector<float> one = p.run(p.packed_matrix(), cria::cpu::best_isa());
    const std::vector<float> two = p.run(p.packed_matrix(), cria::cpu::best_isa(), &pool);
    ASSERT_EQ(one.size(), two.size());
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], two[i]) << i;
}

// A row's result does not depend on whether the wide (32-row) kernel of a
// product of many columns or the 16-row one of a product of few computed it.
// The f32 FMA kernels' summation order depends on how many columns a tile
// has (one chain from 4 columns on, partial sums below), so the narrow
// products here take 4 columns at a time, [0, 4), [4, 8), [8, 10), ...
// The wide F16/BF16 kernel's tiles are 8 columns: its last tile of 5-7
// columns (n = 13, 23) must still sum as a tile of 4 and the rest. (BF16 with
// AVX512-BF16 runs one kernel for both, whose order does not depend on the
// tile.) n = 135 is more than one task of 64 columns: Q6_K's panel kernel
// takes a task's 64 columns in one call, as 16 tiles of 4, and the last 7 as
// one of 4 and one of 3.
TEST_P(PackedTypes, WideKernelEqualsNarrowTileByTile) {
    for (const int64_t n : {kWide + 2, int64_t{13}, int64_t{23}, int64_t{135}}) {
        const PackedProblem p(GetParam(), 81, 1536, n, 9);  // long rows: 48 blocks
        const std::vector<float> wide = p.run(p.packed_matrix(), cria::cpu::best_isa());
        for (int64_t c0 = 0; c0 < p.n; c0 += 4) {
            const int64_t cols = std::min<int64_t>(4, p.n - c0);
            ASSERT_LT(cols, kWide);
            std::vector<float> y(static_cast<size_t>(p.rows * cols), -1.0f);
            mm::MatmulArgs a;
            a.w = p.packed_matrix();
            a.x = p.x.data() + c0 * p.x_stride;
            a.n = cols;
            a.x_stride = p.x_stride;
            a.y = y.data();
            a.y_stride = p.rows;
            a.r1 = p.rows;
            mm::matmul(a, cria::cpu::best_isa(), nullptr);
            for (int64_t c = 0; c < cols; ++c)
                for (int64_t r = 0; r < p.rows; ++r)
                    ASSERT_EQ(y[static_cast<size_t>(c * p.rows + r)], wide[static_cast<size_t>((c0 + c) * p.y_stride + r)])
                        << p.describe(cria::cpu::best_isa(), r, c0 + c);
        }
    }
}

TEST_P(PackedTypes, RowRangeFromAGroupWritesOnlyThoseRowsWide) {
    const PackedProblem p(GetParam(), 57, 256, kWide + 1, 12);
    const std::vector<float> all = p.run(p.packed_matrix(), cria::cpu::best_isa());
    const std::vector<float> part = p.run(p.packed_matrix(), cria::cpu::best_isa(), nullptr, 16, 41);
    for (int64_t c = 0; c < p.n; ++c)
        for (int64_t r = 0; r < p.y_stride; ++r) {
            const size_t i = static_cast<size_t>(c * p.y_stride + r);
            if (r >= 16 && r < 41)
                ASSERT_EQ(part[i], all[i]) << r;
            else
                ASSERT_EQ(part[i], -12345.0f) << r;
        }
}

TEST_P(PackedTypes, RowRangeFromAGroupWritesOnlyThoseRows) {
    const PackedProblem p(GetParam(), 57, 256, 2, 11);
    const std::vector<float> all = p.run(p.packed_matrix(), cria::cpu::best_isa());
    const std::vector<float> part = p.run(p.packed_matrix(), cria::cpu::best_isa(), nullptr, 16, 41);
    for (int64_t c = 0; c < p.n; ++c)
        for (int64_t r = 0; r < p.y_stride; ++r) {
            const size_t i = static_cast<size_t>(c * p.y_stride + r);
            if (r >= 16 && r < 41)
                ASSERT_EQ(part[i], all[i]) << r;
            else
                ASSERT_EQ(part[i], -12345.0f) << r;
        }
}

// MXFP4's packed kernels turn the E8M0 exponents into floats themselves;
// exponents 0 and 1 are the subnormal scales 2^-128 and 2^-127 (ggml's
// E8M0_TO_FP32_HALF), which random weights never hold. A wrong decode is off
// by a factor of two at least (or infinite).
TEST(PackedMxfp4, SubnormalAndLargeExponents) {
    for (const uint8_t base : {uint8_t{0}, uint8_t{150}}) {
        PackedProblem p(ElementType::MXFP4, 21, 128, 3, 41);
        for (int64_t r = 0; r < p.rows; ++r)
            for (int64_t b = 0; b < p.k / 32; ++b)
                p.w[static_cast<size_t>(r) * p.w_stride + static_cast<size_t>(b) * 17] = static_cast<uint8_t>(base + (r + b) % 4);
        mm::pack_weights(p.plain_matrix(), mm::Packing::Rows16, p.packed.data());
        const std::vector<float> ref = p.run(p.plain_matrix(), Isa::Scalar);
        for (Isa isa : {Isa::Scalar, cria::cpu::best_isa()}) {
            const std::vector<float> got = p.run(p.packed_matrix(), isa);
            for (int64_t c = 0; c < p.n; ++c)
                for (int64_t r = 0; r < p.rows; ++r) {
                    const size_t i = static_cast<size_t>(c * p.y_stride + r);
                    ASSERT_TRUE(std::isfinite(got[i]) && ref[i] != 0.0f) << p.describe(isa, r, c);
                    ASSERT_TRUE(std::fabs(static_cast<double>(got[i]) - ref[i]) <= 1e-3 * p.magnitude(r, c))
                        << p.describe(isa, r, c) << ": " << got[i] << " vs " << ref[i];
                }
        }
    }
}

// IQ4_XS's VNNI kernels keep the scalar reference's integers and float
// order (rows16_iq4_xs.h), so every level equals the plain scalar reference
// bit for bit: 16-row tiles (1-7 columns) and 32-row ones (8 and more), on
// rows that end in a part group, k = 256 to 4096, scales of both signs.
TEST(PackedIq4Xs, EveryKernelEqualsScalarReferenceBitForBit) {
    uint32_t seed = 300;
    for (const Shape& s : {Shape{1, 256, 1}, Shape{17, 256, 3}, Shape{33, 2048, 17}, Shape{50, 2304, 64},
                           Shape{16, 4096, 70}, Shape{31, 512, 9}, Shape{47, 768, 5}}) {
        const PackedProblem p(ElementType::IQ4_XS, s.rows, s.k, s.n, seed++);
        const std::vector<float> ref = p.run(p.plain_matrix(), Isa::Scalar);
        for (Isa isa : {Isa::Avx512Vnni, Isa::Amx}) {
            if (!cria::cpu::isa_supported(isa)) continue;
            const std::vector<float> got = p.run(p.packed_matrix(), isa);
            for (int64_t c = 0; c < p.n; ++c)
                for (int64_t r = 0; r < p.y_stride; ++r) {
                    const size_t i = static_cast<size_t>(c * p.y_stride + r);
                    ASSERT_EQ(got[i], ref[i]) << p.describe(isa, r, c);
                }
        }
    }
}

// The matmul driver's AMX path (emulated tiles) for many columns gives the
// scalar reference's bits too.
TEST(PackedIq4Xs, EmulatedAmxPathEqualsScalarReference) {
    ASSERT_NE(mm::detail::packed_amx_emulated_kernel(ElementType::IQ4_XS, mm::Packing::Rows16).tile, nullptr);
    if (!cria::cpu::isa_supported(Isa::Avx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI";
    const PackedProblem p(ElementType::IQ4_XS, 40, 512, 2 * mm::detail::kAmxKernelMinColumns + 1, 310);
    const std::vector<float> ref = p.run(p.plain_matrix(), Isa::Scalar);
    const mm::detail::AmxEmulationScope emulate;
    const std::vector<float> got = p.run(p.packed_matrix(), Isa::Avx512Vnni);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], ref[i]) << i;
}

// Packing keeps every field: an all-zero padding row, scales 0 and 63
// (ls - 32 = -32 and +31), negative d.
TEST(PackedIq4Xs, ExtremeScalesAndSigns) {
    PackedProblem p(ElementType::IQ4_XS, 19, 512, 3, 320);
    for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t b = 0; b < p.k / 256; ++b) {
            auto* blk = reinterpret_cast<cria::quant::block_iq4_xs*>(p.w.data() + static_cast<size_t>(r) * p.w_stride) + b;
            const bool high = (r + b) % 2 == 0;
            blk->scales_h = high ? 0xFFFF : 0x0000;
            std::memset(blk->scales_l, high ? 0xFF : 0x00, sizeof blk->scales_l);
            if (r % 3 == 0) blk->d = cria::f32_to_f16(-0.0123f);
        }
    mm::pack_weights(p.plain_matrix(), mm::Packing::Rows16, p.packed.data());
    const std::vector<float> ref = p.run(p.plain_matrix(), Isa::Scalar);
    for (Isa isa : {Isa::Scalar, Isa::Avx512Vnni}) {
        if (!cria::cpu::isa_supported(isa)) continue;
        const std::vector<float> got = p.run(p.packed_matrix(), isa);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], ref[i]) << cria::cpu::isa_name(isa) << " " << i;
    }
}

// Packed IQ4_XS takes whole super-blocks: other row lengths are refused
// by the packer and by validate (a clear cria::Error, no read past the end).
TEST(PackedIq4Xs, RowLengthsOfPartSuperBlocksAreRefused) {
    const PackedProblem p(ElementType::IQ4_XS, 20, 512, 1, 330);
    std::vector<uint8_t> out(mm::packed_bytes(ElementType::IQ4_XS, 20, 512, mm::Packing::Rows16));
    mm::WeightMatrix part{ElementType::IQ4_XS, p.w.data(), 20, 320, p.w_stride};
    EXPECT_THROW(mm::pack_weights(part, mm::Packing::Rows16, out.data()), cria::Error);
    mm::MatmulArgs a;
    a.w = {ElementType::IQ4_XS, p.packed.data(), 20, 320, 0, mm::Packing::Rows16};
    std::vector<float> x(320), y(20);
    a.x = x.data();
    a.y = y.data();
    a.r1 = 20;
    EXPECT_THROW(mm::validate(a), cria::Error);
    a.w.k = 512;
    EXPECT_NO_THROW(mm::validate(a));
}

INSTANTIATE_TEST_SUITE_P(Types, PackedTypes, ::testing::ValuesIn(kPackable),
                         [](const auto& info) { return std::string(cria::element_type_name(info.param)); });

TEST(Packing, SizesAndChoices) {
    // A group holds exactly 16 rows' bytes of the file's layout.
    EXPECT_EQ(mm::packed_group_bytes(ElementType::Q4_0, 2048, mm::Packing::Rows16), 16u * 1152u);
    EXPECT_EQ(mm::packed_group_bytes(ElementType::Q8_0, 2048, mm::Packing::Rows16), 16u * 2176u);
    EXPECT_EQ(mm::packed_bytes(ElementType::Q4_0, 17, 64, mm::Packing::Rows16), 2u * 16u * 36u);
    EXPECT_EQ(mm::packing_rows(mm::Packing::Rows16), 16);
    EXPECT_TRUE(mm::supports_packing(ElementType::IQ4_NL, mm::Packing::Rows16));
    EXPECT_TRUE(mm::supports_packing(ElementType::Q4_K, mm::Packing::Rows16));
    EXPECT_TRUE(mm::supports_packing(ElementType::Q6_K, mm::Packing::Rows16));
    EXPECT_TRUE(mm::supports_packing(ElementType::Q5_K, mm::Packing::Rows16));
    EXPECT_FALSE(mm::supports_packing(ElementType::Q3_K, mm::Packing::Rows16));
    EXPECT_EQ(mm::packed_group_bytes(ElementType::Q4_K, 2048, mm::Packing::Rows16), 8u * 2368u);
    // Q5_K: the file's 16 x 176 bytes per super-block, plus 64 for the unpacked scales.
    EXPECT_EQ(mm::packed_group_bytes(ElementType::Q5_K, 2048, mm::Packing::Rows16), 8u * (16u * 176u + 64u));
    EXPECT_EQ(mm::packed_group_bytes(ElementType::Q5_K, 2000, mm::Packing::Rows16), 0u);
    // IQ4_XS: the file's 16 x 136 bytes per super-block, plus 64 (unpacked scales, alignment).
    EXPECT_TRUE(mm::supports_packing(ElementType::IQ4_XS, mm::Packing::Rows16));
    EXPECT_EQ(mm::packed_group_bytes(ElementType::IQ4_XS, 2048, mm::Packing::Rows16), 8u * (16u * 136u + 64u));
    EXPECT_EQ(mm::packed_group_bytes(ElementType::IQ4_XS, 2000, mm::Packing::Rows16), 0u);
    EXPECT_EQ(mm::preferred_packing(ElementType::IQ4_XS, Isa::Avx512Vnni), mm::Packing::Rows16);
    EXPECT_EQ(mm::preferred_packing(ElementType::IQ4_XS, Isa::Avx512), mm::Packing::None);
    EXPECT_EQ(mm::preferred_packing(ElementType::Q4_0, Isa::Avx2), mm::Packing::None);
    EXPECT_EQ(mm::preferred_packing(ElementType::Q4_0, Isa::Avx512Vnni), mm::Packing::Rows16);
    EXPECT_EQ(mm::preferred_packing(ElementType::F32, Isa::Avx512Vnni), mm::Packing::None);
    EXPECT_EQ(mm::packed_group_bytes(ElementType::F16, 7, mm::Packing::Rows16), 16u * 14u);
}

TEST(Packing, BadUsesThrow) {
    const PackedProblem p(ElementType::Q4_0, 40, 64, 1, 3);
    std::vector<uint8_t> out(4096);
    mm::WeightMatrix f32{ElementType::F32, p.w.data(), 4, 16, 64};
    EXPECT_THROW(mm::pack_weights(f32, mm::Packing::Rows16, out.data()), cria::Error);
    EXPECT_THROW(mm::pack_weights(p.packed_matrix(), mm::Packing::Rows16, out.data()), cria::Error);
    // A packed product must start at a group.
    EXPECT_THROW(p.run(p.packed_matrix(), Isa::Scalar, nullptr, 8, 40), cria::Error);
    mm::WeightMatrix unpackable{ElementType::Q3_K, p.w.data(), 4, 256, 110, mm::Packing::Rows16};
    mm::MatmulArgs a;
    a.w = unpackable;
    std::vector<float> x(256), y(4);
    a.x = x.data();
    a.y = y.data();
    a.r1 = 4;
    EXPECT_THROW(mm::validate(a), cria::Error);
}

}  // namespace
