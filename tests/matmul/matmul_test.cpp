// Every matmul kernel against the scalar reference, on random data of awkward
// sizes, at every instruction-set level this CPU has; the scalar reference
// itself against a dequantise-and-dot in double.
//
// Error bounds (all relative to S = sum_i |w_i * x_i| of the exact product,
// plus a tiny absolute floor so that all-small rows do not divide by zero):
// - SIMD vs scalar reference, quantised types: both compute the same integer
//   block sums; only the order of the float additions of block results
//   differs, so |diff| <= 1e-5 * S.
// - SIMD vs scalar reference, F32/F16/BF16: the reference sums in double, the
//   kernels in float lanes: |diff| <= k * 2^-24 * S (a float sum's worst case).
// - Scalar reference vs double dot of the dequantised weights with the exact
//   activations: each activation is rounded to its 8-bit grid, an error of at
//   most half a step plus the rounding of the block scale to f16, so
//   |diff| <= sum_i |w_i| * 0.6 * step(i) + 1e-3 * S, step = block max / 127.
// NaN never passes: every check is written as `diff <= bound`.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/core/float16.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"
#include "cria/quant/blocks.h"
#include "cria/quant/quantize.h"
#include "random_data.h"

namespace {

using cria::ElementType;
using cria::cpu::Isa;
namespace mm = cria::matmul;
using namespace cria::matmul::test;

const ElementType kAllTypes[] = {
    ElementType::F32,  ElementType::F16,  ElementType::BF16, ElementType::Q4_0,   ElementType::Q4_1,   ElementType::Q5_0,
    ElementType::Q5_1, ElementType::Q8_0, ElementType::Q2_K, ElementType::Q3_K,   ElementType::Q4_K,   ElementType::Q5_K,
    ElementType::Q6_K, ElementType::IQ4_NL, ElementType::IQ4_XS, ElementType::MXFP4,
};

bool is_float_type(ElementType t) {
    return t == ElementType::F32 || t == ElementType::F16 || t == ElementType::BF16;
}

struct Problem {
    ElementType type;
    int64_t rows, k, n;
    size_t w_stride;
    int64_t x_stride, y_stride;
    std::vector<uint8_t> w;
    std::vector<float> x;

    Problem(ElementType t, int64_t rows_, int64_t k_, int64_t n_, uint32_t seed)
        : type(t), rows(rows_), k(k_), n(n_), w_stride(row_bytes(t, k_) + 16), x_stride(k_ + 5), y_stride(rows_ + 3),
          w(random_weights(t, rows_, k_, w_stride, seed)), x(random_activations(n_, x_stride, seed + 1)) {}

    mm::MatmulArgs args(float* y, int64_t r0 = 0, int64_t r1 = -1) const {
        mm::MatmulArgs a;
        a.w = {type, w.data(), rows, k, w_stride};
        a.x = x.data();
        a.n = n;
        a.x_stride = x_stride;
        a.y = y;
        a.y_stride = y_stride;
        a.r0 = r0;
        a.r1 = r1 < 0 ? rows : r1;
        return a;
    }
    std::vector<float> run(Isa isa, cria::cpu::ThreadPool* pool = nullptr) const {
        std::vector<float> y(static_cast<size_t>(n * y_stride), -12345.0f);
        mm::matmul(args(y.data()), isa, pool);
        return y;
    }
    // Dequantised weights, as doubles (needs the quant module's reference).
    std::vector<double> dequantized_row(int64_t r) const {
        std::vector<float> f(static_cast<size_t>(k));
        cria::quant::dequantize_row(type, w.data() + static_cast<size_t>(r) * w_stride, f.data(), k);
        return {f.begin(), f.end()};
    }
};

std::string describe(const Problem& p, Isa isa, int64_t r, int64_t c) {
    return std::string(cria::element_type_name(p.type)) + " " + std::string(cria::cpu::isa_name(isa)) +
           " rows=" + std::to_string(p.rows) + " k=" + std::to_string(p.k) + " n=" + std::to_string(p.n) +
           " at row " + std::to_string(r) + " col " + std::to_string(c);
}

std::vector<Isa> levels_here() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Amx})
        if (cria::cpu::isa_supported(isa)) out.push_back(isa);
    return out;
}

struct Shape { int64_t rows, n; };

std::vector<int64_t> ks_for(ElementType t) {
    std::vector<int64_t> ks;
    const uint32_t bs = cria::element_type_info(t)->block_size;
    for (int64_t k : {32, 64, 256, 512})
        if (k % bs == 0) ks.push_back(k);
    if (is_float_type(t))
        for (int64_t k : {1, 7, 31, 33, 255, 257}) ks.push_back(k);
    return ks;
}

// Covers every rows value {1,7,31,33,257} and every batch {1,2,3,7,16,33}.
const Shape kShapes[] = {{1, 1}, {7, 2}, {31, 3}, {33, 7}, {257, 16}, {33, 33}, {7, 33}, {257, 1}, {1, 16}};
// The long rows (k = 4096, 4097) on fewer shapes, to keep the suite fast.
const Shape kLongShapes[] = {{7, 1}, {33, 3}, {31, 16}, {1, 33}};

// Sum_i |w_i x_i| in double for row r, column c (for the error bounds).
double magnitude(const Problem& p, const std::vector<double>& w, int64_t c) {
    double s = 0;
    for (int64_t i = 0; i < p.k; ++i) s += std::fabs(w[i] * p.x[c * p.x_stride + i]);
    return s;
}

void compare_levels(const Problem& p) {
    const std::vector<float> ref = p.run(Isa::Scalar);
    const bool deq = cria::quant::can_dequantize(p.type);
    for (Isa isa : levels_here()) {
        const std::vector<float> got = p.run(isa);
        for (int64_t r = 0; r < p.rows; ++r) {
            // Without the quant module's dequantiser, bound by |x| alone: scales
            // are <= 0.02 and quants <= 128 in magnitude (F types: |w| <= 1).
            std::vector<double> w = deq ? p.dequantized_row(r) : std::vector<double>(p.k, is_float_type(p.type) ? 1.0 : 2.6);
            for (int64_t c = 0; c < p.n; ++c) {
                const double s = magnitude(p, w, c);
                const double bound = is_float_type(p.type) ? static_cast<double>(p.k) * 0x1p-24 * s + 1e-6
                                                           : 1e-5 * s + 1e-6;
                const double diff = std::fabs(static_cast<double>(got[c * p.y_stride + r]) - ref[c * p.y_stride + r]);
                ASSERT_TRUE(diff <= bound) << describe(p, isa, r, c) << ": " << got[c * p.y_stride + r] << " vs "
                                           << ref[c * p.y_stride + r] << " (bound " << bound << ")";
            }
        }
        // Padding between output vectors is never written.
        for (int64_t c = 0; c < p.n; ++c)
            for (int64_t r = p.rows; r < p.y_stride && c * p.y_stride + r < static_cast<int64_t>(got.size()); ++r)
                ASSERT_EQ(got[c * p.y_stride + r], -12345.0f) << describe(p, isa, r, c);
    }
}

class MatmulTypes : public ::testing::TestWithParam<ElementType> {};

TEST_P(MatmulTypes, EveryLevelMatchesScalarReference) {
    const ElementType t = GetParam();
    uint32_t seed = 1000 + static_cast<uint32_t>(t);
    for (int64_t k : ks_for(t))
        for (const Shape& s : kShapes) {
            SCOPED_TRACE(testing::Message() << "k=" << k << " rows=" << s.rows << " n=" << s.n);
            compare_levels(Problem(t, s.rows, k, s.n, seed++));
        }
    for (int64_t k : {int64_t{4096}, int64_t{4097}}) {
        if (k % cria::element_type_info(t)->block_size != 0) continue;
        for (const Shape& s : kLongShapes) compare_levels(Problem(t, s.rows, k, s.n, seed++));
    }
}

// The reference itself: the scalar kernel against the dequantised weights
// times the exact activations, in double.
TEST_P(MatmulTypes, ReferenceMatchesDequantizedDot) {
    const ElementType t = GetParam();
    if (!cria::quant::can_dequantize(t)) GTEST_SKIP() << "quant module cannot dequantize this type yet";
    const auto* info = cria::element_type_info(t);
    const int64_t grid = is_float_type(t) ? 1 : (info->block_size == 256 ? 256 : 32);
    for (int64_t k : {int64_t{256}, int64_t{512}, int64_t{4096}}) {
        Problem p(t, 33, k, 3, 77 + static_cast<uint32_t>(k));
        const std::vector<float> y = p.run(Isa::Scalar);
        for (int64_t r = 0; r < p.rows; ++r) {
            const std::vector<double> w = p.dequantized_row(r);
            for (int64_t c = 0; c < p.n; ++c) {
                const float* x = p.x.data() + c * p.x_stride;
                double exact = 0, s = 0, rounding = 0;
                for (int64_t b = 0; b < k; b += grid) {
                    double amax = 0;
                    for (int64_t i = b; i < b + grid; ++i) amax = std::max(amax, std::fabs(double{x[i]}));
                    for (int64_t i = b; i < b + grid; ++i) {
                        exact += w[i] * x[i];
                        s += std::fabs(w[i] * x[i]);
                        if (!is_float_type(t)) rounding += std::fabs(w[i]) * 0.6 * amax / 127.0;
                    }
                }
                const double bound = rounding + (is_float_type(t) ? 1e-6 : 1e-3) * s + 1e-6;
                const double diff = std::fabs(double{y[c * p.y_stride + r]} - exact);
                ASSERT_TRUE(diff <= bound) << info->name << " k=" << k << " row " << r << " col " << c << ": "
                                           << y[c * p.y_stride + r] << " vs " << exact << " (bound " << bound << ")";
            }
        }
    }
}

// The task split does not depend on the thread count, so a pool gives the
// very same bits as the calling thread alone.
TEST_P(MatmulTypes, ThreadsGiveIdenticalBits) {
    const ElementType t = GetParam();
    cria::cpu::ThreadPool pool(3);
    for (const Shape& s : {Shape{257, 1}, Shape{33, 33}, Shape{257, 16}}) {
        const int64_t k = is_float_type(t) ? 257 : 512;
        Problem p(t, s.rows, k, s.n, 4242);
        const Isa isa = cria::cpu::detected_isa();
        const std::vector<float> one = p.run(isa);
        const std::vector<float> many = p.run(isa, &pool);
        ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)));
    }
}

// A decode product (a few activation vectors) large enough for 52 tasks,
// split into one stretch of tasks per thread (3 threads: stretches of 17, 17
// and 18 tasks, each finished from its back end by the threads done first),
// and a product smaller than one task: every row is written, once, with the
// bits of the calling thread alone.
TEST(Matmul, DecodeStretchesGiveIdenticalBits) {
    cria::cpu::ThreadPool pool(3);
    const Isa isa = cria::cpu::detected_isa();
    for (const Shape& s : {Shape{4100, 1}, Shape{4100, 8}, Shape{3, 2}}) {
        Problem p(ElementType::Q4_0, s.rows, 512, s.n, 77);
        const std::vector<float> one = p.run(isa);
        const std::vector<float> many = p.run(isa, &pool);
        for (int64_t c = 0; c < p.n; ++c)
            for (int64_t r = 0; r < s.rows; ++r) ASSERT_NE(many[c * p.y_stride + r], -12345.0f) << r;
        ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)));
    }
}

// A prefill product (many activation vectors) runs its quantisation and its
// compute tasks in one job of the pool, a compute task waiting only for the
// quantisation of its own 64 columns: four column groups, the last a partial
// one (203 = 3 x 64 + 11, not a whole number of 8-vector quantisation tasks),
// and a row range that starts inside the matrix. Every output is written, with
// the bits of the calling thread alone.
TEST(Matmul, PrefillInOneJobGivesIdenticalBits) {
    cria::cpu::ThreadPool pool(3);
    const Isa isa = cria::cpu::detected_isa();
    for (const ElementType t : {ElementType::Q4_0, ElementType::Q4_K}) {
        Problem p(t, 300, 512, 203, 99);
        const std::vector<float> one = p.run(isa);
        const std::vector<float> many = p.run(isa, &pool);
        for (int64_t c = 0; c < p.n; ++c)
            for (int64_t r = 0; r < p.rows; ++r) ASSERT_NE(many[c * p.y_stride + r], -12345.0f) << r;
        ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)));

        std::vector<float> part_one(static_cast<size_t>(p.n * p.y_stride), -7.0f), part_many = part_one;
        mm::matmul(p.args(part_one.data(), 32, 288), isa, nullptr);
        mm::matmul(p.args(part_many.data(), 32, 288), isa, &pool);
        ASSERT_EQ(0, std::memcmp(part_one.data(), part_many.data(), part_one.size() * sizeof(float)));
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(cria::element_type_name(info.param)); });

TEST(Matmul, RowRangeWritesOnlyThoseRows) {
    Problem p(ElementType::Q4_0, 33, 64, 3, 5);
    std::vector<float> y(static_cast<size_t>(p.n * p.y_stride), -7.0f);
    mm::matmul(p.args(y.data(), 5, 20), cria::cpu::detected_isa(), nullptr);
    const std::vector<float> full = p.run(cria::cpu::detected_isa());
    for (int64_t c = 0; c < p.n; ++c)
        for (int64_t r = 0; r < p.y_stride; ++r) {
            const float v = y[c * p.y_stride + r];
            if (r >= 5 && r < 20) EXPECT_EQ(v, full[c * p.y_stride + r]);
            else EXPECT_EQ(v, -7.0f);
        }
}

// matmul(args) follows cpu::best_isa(): capping the level at Scalar gives the
// scalar reference's exact bits.
TEST(Matmul, DefaultLevelFollowsIsaLimit) {
    Problem p(ElementType::Q4_K, 33, 512, 3, 11);
    const std::vector<float> ref = p.run(Isa::Scalar);
    std::vector<float> y(ref.size(), -12345.0f);
    {
        cria::cpu::ScopedIsaLimit limit(Isa::Scalar);
        mm::matmul(p.args(y.data()));
    }
    EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), y.size() * sizeof(float)));
}

TEST(Matmul, BadArgumentsThrow) {
    Problem p(ElementType::Q4_0, 4, 64, 2, 9);
    std::vector<float> y(64);
    auto a = p.args(y.data());
    mm::MatmulArgs bad = a;
    bad.w.k = 48;  // not a whole number of blocks
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    bad = a;
    bad.w.row_stride = 10;
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    bad = a;
    bad.r1 = 5;
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    bad = a;
    bad.x_stride = 10;
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    bad = a;
    bad.w.type = ElementType::IQ2_XXS;
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    bad = a;
    bad.w.type = ElementType::Q4_K;  // 64 is not a multiple of 256
    EXPECT_THROW(mm::matmul(bad), cria::Error);
    EXPECT_NO_THROW(mm::matmul(a));
}

// The activation quantiser feeds every quantised kernel: a case worked by
// hand. Activations on the integer grid with max 127 quantise exactly (d = 1).
TEST(Matmul, SmallQ8_0ProductByHand) {
    cria::quant::block_q8_0 w{};
    w.d = cria::f32_to_f16(0.5f);
    std::vector<float> x(32);
    double exact = 0;
    for (int i = 0; i < 32; ++i) {
        w.qs[i] = static_cast<int8_t>(i - 16);
        x[i] = static_cast<float>(127 - 8 * i);
        exact += 0.5 * (i - 16) * (127 - 8 * i);
    }
    float y = 0;
    mm::MatmulArgs a;
    a.w = {ElementType::Q8_0, &w, 1, 32, sizeof w};
    a.x = x.data();
    a.y = &y;
    a.r1 = 1;
    for (Isa isa : {Isa::Scalar, cria::cpu::detected_isa()}) {
        y = 0;
        mm::matmul(a, isa, nullptr);
        EXPECT_EQ(y, static_cast<float>(exact)) << cria::cpu::isa_name(isa);
    }
}

}  // namespace
