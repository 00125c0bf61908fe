// AMX kernels (src/matmul/amx_kernel*.h). Their packing, tile shapes, loops
// and scale handling run everywhere on the emulated tile policy: it must give
// the VNNI kernel's results bit for bit (the wide one, else the 16-row one:
// same exact integer block sums, same float operations in the same order)
// and stay within matmul_test.cpp's bound of the scalar reference, on random
// data of awkward sizes (rows not a multiple of 16, 1..67 columns, 1..9
// blocks of 32 or 256 values). The hardware kernel must give the emulation's
// results bit for bit; that test skips, saying why, on machines without
// usable AMX. Its AVX-512 half (the block math) is checked on emulated tiles
// wherever AVX-512 VNNI exists.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"
#include "cria/matmul/packing.h"
#include "cria/quant/quantize.h"
#include "matmul/amx_tiles.h"
#include "matmul/kernels.h"
#include "random_data.h"

namespace {

using cria::ElementType;
using cria::cpu::Isa;
namespace mm = cria::matmul;
namespace detail = cria::matmul::detail;
using namespace cria::matmul::test;

const ElementType kAmxTypes[] = {ElementType::Q8_0, ElementType::Q4_0, ElementType::IQ4_NL, ElementType::MXFP4,
                                 ElementType::Q4_K, ElementType::Q6_K, ElementType::IQ4_XS};

// The activation format of each type's AMX kernel, and its block size.
bool is_k_quant(ElementType t) {
    return t == ElementType::Q4_K || t == ElementType::Q6_K || t == ElementType::IQ4_XS;
}

struct Shape { int64_t rows, n, blocks; };
// Rows around one and two groups, columns around one and two A tiles (and a
// column task of 64 plus a few), 1..9 blocks.
const Shape kShapes[] = {{1, 1, 1},   {7, 16, 2},   {15, 17, 3}, {16, 31, 1},  {17, 32, 4},  {31, 33, 5},
                         {33, 47, 9}, {48, 64, 2},  {50, 67, 7}, {65, 5, 6},   {97, 40, 8},  {16, 16, 9}};

// A problem with its weights packed and its activations in the AMX kernel's
// format (Q8_0Planar; Q8_K for the K-quants, whose blocks are 256 values).
struct AmxProblem {
    ElementType type;
    int64_t rows, k, n;
    size_t w_stride;
    std::vector<uint8_t> w, packed;
    std::vector<float> x;
    size_t act_bytes;
    std::vector<uint8_t> act;

    AmxProblem(ElementType t, const Shape& s, uint32_t seed)
        : type(t), rows(s.rows), k((is_k_quant(t) ? 256 : 32) * s.blocks), n(s.n), w_stride(row_bytes(t, k) + 8),
          w(random_weights(t, rows, k, w_stride, seed)), packed(mm::packed_bytes(t, rows, k, mm::Packing::Rows16)),
          x(random_activations(n, k, seed + 1)),
          act_bytes(detail::activation_row_bytes(format(), k)),
          act(act_bytes * static_cast<size_t>(n)) {
        mm::pack_weights({type, w.data(), rows, k, w_stride}, mm::Packing::Rows16, packed.data());
        for (int64_t c = 0; c < n; ++c)
            detail::prepare_activation_row(format(), x.data() + c * k, k,
                                           act.data() + static_cast<size_t>(c) * act_bytes);
    }

    detail::ActivationFormat format() const {
        return is_k_quant(type) ? detail::ActivationFormat::Q8_K : detail::ActivationFormat::Q8_0Planar;
    }

    // The product through one kernel's tiles, as matmul walks them.
    std::vector<float> run(const detail::TypeKernel& kernel) const {
        EXPECT_EQ(kernel.act, format());
        const size_t group_bytes = mm::packed_group_bytes(type, k, mm::Packing::Rows16);
        std::vector<float> y(static_cast<size_t>(n * rows), -12345.0f);
        detail::Tile t{};
        t.k = k;
        t.w_stride = group_bytes;
        t.a_stride = act_bytes;
        t.y_stride = static_cast<size_t>(rows);
        for (int64_t r = 0; r < rows; r += kernel.max_rows) {
            t.n_rows = static_cast<int>(std::min<int64_t>(kernel.max_rows, rows - r));
            t.w = packed.data() + static_cast<size_t>(r / 16) * group_bytes;
            for (int64_t c = 0; c < n; c += kernel.max_cols) {
                t.n_cols = static_cast<int>(std::min<int64_t>(kernel.max_cols, n - c));
                t.a = act.data() + static_cast<size_t>(c) * act_bytes;
                t.y = y.data() + c * rows + r;
                kernel.tile(t);
            }
        }
        return y;
    }

    std::string describe(int64_t r, int64_t c) const {
        return std::string(cria::element_type_name(type)) + " rows=" + std::to_string(rows) +
               " k=" + std::to_string(k) + " n=" + std::to_string(n) + " at row " + std::to_string(r) + " col " +
               std::to_string(c);
    }
};

void expect_bit_identical(const AmxProblem& p, const std::vector<float>& got, const std::vector<float>& want) {
    for (int64_t c = 0; c < p.n; ++c)
        for (int64_t r = 0; r < p.rows; ++r) {
            const size_t i = static_cast<size_t>(c * p.rows + r);
            uint32_t a, b;
            std::memcpy(&a, &got[i], 4);
            std::memcpy(&b, &want[i], 4);
            ASSERT_EQ(a, b) << p.describe(r, c) << ": " << got[i] << " vs " << want[i];
        }
}

class AmxTypes : public ::testing::TestWithParam<ElementType> {};

TEST_P(AmxTypes, EmulatedKernelIsWithinTheScalarReferenceBound) {
    const detail::TypeKernel amx = detail::packed_amx_emulated_kernel(GetParam(), mm::Packing::Rows16);
    ASSERT_NE(amx.tile, nullptr);
    uint32_t seed = 300;
    for (const Shape& s : kShapes) {
        const AmxProblem p(GetParam(), s, seed++);
        const std::vector<float> got = p.run(amx);
        std::vector<float> want(static_cast<size_t>(p.n * p.rows));
        mm::MatmulArgs a;
        a.w = {p.type, p.w.data(), p.rows, p.k, p.w_stride};
        a.x = p.x.data();
        a.n = p.n;
        a.x_stride = p.k;
        a.y = want.data();
        a.y_stride = p.rows;
        a.r0 = 0;
        a.r1 = p.rows;
        mm::matmul(a, Isa::Scalar, nullptr);
        std::vector<float> wf(static_cast<size_t>(p.k));
        for (int64_t r = 0; r < p.rows; ++r) {
            cria::quant::dequantize_row(p.type, p.w.data() + static_cast<size_t>(r) * p.w_stride, wf.data(), p.k);
            for (int64_t c = 0; c < p.n; ++c) {
                double magnitude = 0;
                for (int64_t i = 0; i < p.k; ++i) magnitude += std::fabs(static_cast<double>(wf[i]) * p.x[c * p.k + i]);
                const size_t i = static_cast<size_t>(c * p.rows + r);
                // NaN fails: the check is diff <= bound.
                ASSERT_TRUE(std::fabs(got[i] - want[i]) <= 1e-5 * magnitude + 1e-30)
                    << p.describe(r, c) << ": " << got[i] << " vs scalar " << want[i];
            }
        }
    }
}

TEST_P(AmxTypes, EmulatedKernelEqualsVnniKernelBitForBit) {
    if (!cria::cpu::isa_supported(Isa::Avx512Vnni))
        GTEST_SKIP() << "this CPU has no AVX512-VNNI, so there is no wide VNNI kernel to compare with";
    const detail::TypeKernel amx = detail::packed_amx_emulated_kernel(GetParam(), mm::Packing::Rows16);
    // Q4_K has no wide VNNI kernel: its 16-row kernel is the one to match.
    detail::TypeKernel vnni = detail::packed_avx512_wide_kernel(GetParam(), mm::Packing::Rows16);
    if (!vnni.tile) vnni = detail::packed_avx512_kernel(GetParam(), mm::Packing::Rows16);
    ASSERT_NE(vnni.tile, nullptr);
    uint32_t seed = 500;
    for (const Shape& s : kShapes) {
        const AmxProblem p(GetParam(), s, seed++);
        expect_bit_identical(p, p.run(amx), p.run(vnni));
    }
}

// The hardware kernels' AVX-512 block math (unpacking, int32 scaling, the
// float step) on emulated tiles: all of the hardware kernel but the tile
// instructions themselves.
TEST_P(AmxTypes, Avx512BlockMathEqualsScalarBlockMathBitForBit) {
    if (!cria::cpu::isa_supported(Isa::Avx512Vnni))
        GTEST_SKIP() << "this CPU has no AVX-512 VNNI, which the hardware kernels' block math needs";
    const detail::TypeKernel avx512 = detail::packed_amx_emulated_tiles_avx512_math_kernel(GetParam(), mm::Packing::Rows16);
    ASSERT_NE(avx512.tile, nullptr) << "the compiler could not build the AMX kernels";
    const detail::TypeKernel emu = detail::packed_amx_emulated_kernel(GetParam(), mm::Packing::Rows16);
    uint32_t seed = 900;
    for (const Shape& s : kShapes) {
        const AmxProblem p(GetParam(), s, seed++);
        expect_bit_identical(p, p.run(avx512), p.run(emu));
    }
}

// The reason the hardware AMX kernels cannot run here, or "" when they can.
std::string why_no_amx() {
    const auto& f = cria::cpu::cpu_features();
    if (!f.cpu_has_amx_tile) return "this CPU has no AMX";
    if (!f.os_saves_amx) return "the OS does not enable the AMX tile state (XCR0 bits 17, 18)";
    if (!f.amx_permission_granted) return "the kernel refused the AMX permission request (arch_prctl)";
    if (!f.amx_int8) return "this CPU has AMX-TILE but not AMX-INT8";
    if (!cria::cpu::isa_supported(Isa::Amx)) return "the AMX level is not available";
    return "";
}

TEST_P(AmxTypes, HardwareKernelEqualsEmulationBitForBit) {
    if (const std::string why = why_no_amx(); !why.empty()) GTEST_SKIP() << why;
    const detail::TypeKernel hw = detail::packed_amx_kernel(GetParam(), mm::Packing::Rows16);
    ASSERT_NE(hw.tile, nullptr) << "the compiler could not build the AMX kernels";
    const detail::TypeKernel emu = detail::packed_amx_emulated_kernel(GetParam(), mm::Packing::Rows16);
    uint32_t seed = 700;
    for (const Shape& s : kShapes) {
        const AmxProblem p(GetParam(), s, seed++);
        expect_bit_identical(p, p.run(hw), p.run(emu));
    }
}

// The matmul driver's AMX path (emulated tiles): tasks, tile walk, row
// ranges and threads give the VNNI path's results bit for bit.
TEST_P(AmxTypes, DriverWithEmulatedAmxEqualsVnniBitForBit) {
    if (!cria::cpu::isa_supported(Isa::Avx512Vnni))
        GTEST_SKIP() << "this CPU has no AVX-512 VNNI, whose results the AMX path must equal";
    cria::cpu::ThreadPool pool(2);
    uint32_t seed = 1100;
    for (const Shape& s : {Shape{50, 16, 3}, Shape{97, 67, 2}, Shape{33, 40, 1}, Shape{130, 100, 2}}) {
        const AmxProblem p(GetParam(), s, seed++);
        for (const auto& [r0, r1] : {std::pair<int64_t, int64_t>{0, p.rows}, {16, p.rows}, {0, 32}}) {
            const auto run = [&](bool emulate_amx) {
                std::vector<float> y(static_cast<size_t>(p.n * p.rows), -12345.0f);
                mm::MatmulArgs a;
                a.w = {p.type, p.packed.data(), p.rows, p.k, 0, mm::Packing::Rows16};
                a.x = p.x.data();
                a.n = p.n;
                a.x_stride = p.k;
                a.y = y.data();
                a.y_stride = p.rows;
                a.r0 = r0;
                a.r1 = r1;
                std::optional<detail::AmxEmulationScope> scope;
                if (emulate_amx) scope.emplace();
                mm::matmul(a, Isa::Avx512Vnni, &pool);
                return y;
            };
            expect_bit_identical(p, run(true), run(false));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, AmxTypes, ::testing::ValuesIn(kAmxTypes),
                         [](const auto& info) { return std::string(cria::element_type_name(info.param)); });

TEST(AmxDispatch, OnlyTheAmxLevelWithManyColumnsSelectsTheAmxKernel) {
    {
        detail::AmxEmulationScope scope;
        EXPECT_EQ(detail::select_kernel(ElementType::Q8_0, Isa::Scalar, mm::Packing::Rows16, 16).tile,
                  detail::packed_amx_emulated_kernel(ElementType::Q8_0, mm::Packing::Rows16).tile);
    }
    EXPECT_NE(detail::select_kernel(ElementType::Q8_0, Isa::Scalar, mm::Packing::Rows16, 16).tile,
              detail::packed_amx_emulated_kernel(ElementType::Q8_0, mm::Packing::Rows16).tile);
    for (ElementType t : kAmxTypes) {
        const detail::TileFn hw = detail::packed_amx_kernel(t, mm::Packing::Rows16).tile;
        EXPECT_EQ(detail::select_kernel(t, Isa::Amx, mm::Packing::Rows16, 16).tile, hw);
        EXPECT_NE(detail::select_kernel(t, Isa::Amx, mm::Packing::Rows16, 15).tile, hw);
        EXPECT_NE(detail::select_kernel(t, Isa::Avx512Vnni, mm::Packing::Rows16, 64).tile, hw);
        EXPECT_NE(detail::select_kernel(t, Isa::Amx, mm::Packing::None, 64).tile, hw);
    }
    // Types without an AMX kernel keep their VNNI kernels.
    EXPECT_EQ(detail::packed_amx_kernel(ElementType::BF16, mm::Packing::Rows16).tile, nullptr);
    // No machine reaches the AMX level without every condition of it.
    const auto& f = cria::cpu::cpu_features();
    if (cria::cpu::detected_isa() == Isa::Amx) {
        EXPECT_TRUE(f.amx_tile && f.amx_int8 && f.amx_permission_granted);
    }
    if (!f.cpu_has_amx_tile) {
        EXPECT_LT(static_cast<int>(cria::cpu::detected_isa()), static_cast<int>(Isa::Amx));
    }
}

// The emulation refuses what the hardware would fault on.
TEST(AmxEmulation, RefusesUnconfiguredTilesAndMismatchedShapes) {
    detail::EmulatedTiles tiles;
    EXPECT_THROW(tiles.zero<0>(), cria::Error);
    detail::TileConfig cfg;
    cfg.set(0, 2, 8);   // C: 2 x 2 int32
    cfg.set(4, 2, 8);   // A: 2 x 8 bytes (K = 8)
    cfg.set(6, 2, 8);   // B: 2 rows (K / 4) x 2 columns of 4 bytes
    tiles.configure(cfg);
    EXPECT_THROW(tiles.zero<1>(), cria::Error);
    const int8_t a[2][8] = {{1, -2, 3, -4, 5, -6, 7, -8}, {-1, 1, -1, 1, -1, 1, -1, 1}};
    const uint8_t b[2][8] = {{1, 2, 3, 4, 200, 201, 202, 203}, {5, 6, 7, 8, 255, 0, 255, 0}};
    tiles.zero<0>();
    tiles.load<4>(a, 8);
    tiles.load<6>(b, 8);
    tiles.dp_signed_unsigned<0, 4, 6>();
    int32_t c[2][2];
    tiles.store<0>(c, 8);
    // C[m][n] = sum_k A[m][k] * B[k / 4][4n + k % 4].
    for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
            int32_t want = 0;
            for (int k = 0; k < 8; ++k) want += a[m][k] * b[k / 4][4 * n + k % 4];
            EXPECT_EQ(c[m][n], want) << m << "," << n;
        }
    cfg.set(6, 3, 8);  // B with 3 rows does not fit A's K = 8
    tiles.configure(cfg);
    EXPECT_THROW((tiles.dp_signed_unsigned<0, 4, 6>()), cria::Error);
    cfg.set(6, 17, 8);
    EXPECT_THROW(tiles.configure(cfg), cria::Error);
}

}  // namespace

namespace {

// TDPBF16PS as emulated: C[m][n] += sum over pairs p of A[m][2p..2p+1] x
// B[p][2n..2n+1] (the pair layout of B), within float rounding of the exact
// sum, with denormal inputs read as zero.
TEST(AmxEmulation, Bf16ProductUsesThePairLayout) {
    constexpr int M = 3, N = 5, K = 8;  // A: M x K bf16, B: K/2 x 2N bf16
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    uint16_t a[M][K], b[K / 2][2 * N];
    for (auto& row : a)
        for (auto& v : row) v = cria::f32_to_bf16(u(rng));
    for (auto& row : b)
        for (auto& v : row) v = cria::f32_to_bf16(u(rng));
    // A denormal in A meets a huge B value: read as zero, it adds nothing;
    // read as its value, it would add about 1e-2, far outside the bound.
    a[1][3] = 0x0001;
    for (int n = 0; n < N; ++n) b[1][2 * n + 1] = cria::f32_to_bf16(1e38f);
    detail::TileConfig cfg;
    cfg.set(0, M, 4 * N);
    cfg.set(4, M, 2 * K);
    cfg.set(6, K / 2, 4 * N);
    detail::EmulatedTiles tiles;
    tiles.configure(cfg);
    tiles.zero<0>();
    tiles.load<4>(a, sizeof a[0]);
    tiles.load<6>(b, sizeof b[0]);
    tiles.dp_bf16<0, 4, 6>();
    float c[M][N];
    tiles.store<0>(c, sizeof c[0]);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double want = 0, magnitude = 0;
            for (int k = 0; k < K; ++k) {
                const double av = (m == 1 && k == 3) ? 0.0 : cria::bf16_to_f32(a[m][k]);
                const double p = av * cria::bf16_to_f32(b[k / 2][2 * n + k % 2]);
                want += p;
                magnitude += std::fabs(p);
            }
            EXPECT_NEAR(c[m][n], want, 1e-6 * magnitude + 1e-30) << m << "," << n;
        }
}

}  // namespace
