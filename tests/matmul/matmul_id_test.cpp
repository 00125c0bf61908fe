// The indexed expert product (cria/matmul/matmul_id.h) against its
// definition: for every expert, one matmul() of the inputs of the pairs that
// chose it, in pair order, with the same ISA and packing. Both run the same
// tile kernels on the same quantised activations and the same column
// groups, so they must agree bit for bit (matmul() itself is checked against
// the scalar reference in matmul_test.cpp and packed_test.cpp; some kernels,
// F16/BF16 packed, sum in an order that depends on the tile's column count,
// which is why the definition is per expert and not per pair). Awkward sizes: rows not a multiple of
// any tile, odd expert counts, a token routed twice to one expert, experts
// no token chose (whose matrices are poisoned with NaN: reading them would
// show), an expert with more than one task's columns, strided inputs and
// outputs, one input per token (gate/up) or per slot (down), 1 and 2 threads.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/cpu/features.h"
#include "cria/cpu/thread_pool.h"
#include "cria/matmul/matmul.h"
#include "cria/matmul/matmul_id.h"
#include "cria/matmul/packing.h"
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

std::vector<Isa> levels_here() {
    std::vector<Isa> out{Isa::Scalar};
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni})
        if (cria::cpu::isa_supported(isa)) out.push_back(isa);
    return out;
}

// A stack of n_expert random matrices, in the file's rows (expert_stride
// apart, with a gap) and, where the type has it, packed expert by expert.
struct Experts {
    ElementType type;
    int64_t n_expert, rows, k;
    size_t row_stride, expert_stride, packed_stride = 0;
    std::vector<uint8_t> plain, packed;

    Experts(ElementType t, int64_t n_expert_, int64_t rows_, int64_t k_, uint32_t seed)
        : type(t), n_expert(n_expert_), rows(rows_), k(k_), row_stride(row_bytes(t, k_) + 4),
          expert_stride(row_stride * static_cast<size_t>(rows_) + 64),
          plain(random_weights(t, rows_ * n_expert_, k_, row_stride, seed)) {
        // random_weights wrote rows back to back; spread them to expert_stride.
        std::vector<uint8_t> spread(expert_stride * static_cast<size_t>(n_expert));
        for (int64_t e = 0; e < n_expert; ++e)
            std::memcpy(spread.data() + expert_stride * static_cast<size_t>(e),
                        plain.data() + row_stride * static_cast<size_t>(rows * e), row_stride * static_cast<size_t>(rows));
        plain = std::move(spread);
        if (!mm::supports_packing(t, mm::Packing::Rows16)) return;
        packed_stride = mm::packed_bytes(t, rows, k, mm::Packing::Rows16);
        packed.resize(packed_stride * static_cast<size_t>(n_expert));
        for (int64_t e = 0; e < n_expert; ++e)
            mm::pack_weights(matrix(e, mm::Packing::None), mm::Packing::Rows16,
                             packed.data() + packed_stride * static_cast<size_t>(e));
    }
    mm::WeightMatrix matrix(int64_t e, mm::Packing p) const {
        if (p == mm::Packing::None)
            return {type, plain.data() + expert_stride * static_cast<size_t>(e), rows, k, row_stride};
        return {type, packed.data() + packed_stride * static_cast<size_t>(e), rows, k, 0, p};
    }
    mm::ExpertMatrices stack(mm::Packing p) const {
        if (p == mm::Packing::None) return {type, plain.data(), n_expert, rows, k, row_stride, expert_stride, p};
        return {type, packed.data(), n_expert, rows, k, 0, packed_stride, p};
    }
    // Poisons expert e (NaN scales / values) in both layouts.
    void poison(int64_t e) {
        // Every byte 0xFF: an f16/bf16 NaN, a NaN f32, a NaN f16 block scale
        // (or E8M0 255 for MXFP4): any product that reads it is NaN.
        std::memset(plain.data() + expert_stride * static_cast<size_t>(e), 0xFF, expert_stride);
        if (!packed.empty()) std::memset(packed.data() + packed_stride * static_cast<size_t>(e), 0xFF, packed_stride);
    }
};

struct Routing {
    int64_t n_tokens, n_used;
    std::vector<int32_t> ids;
};

struct IdProblem {
    int64_t n_tokens, n_used, x_per_token, x_stride, x_token_stride, y_stride, y_token_stride;
    std::vector<float> x;
};

IdProblem make_problem(int64_t k, int64_t rows, int64_t n_tokens, int64_t n_used, bool per_slot, uint32_t seed) {
    IdProblem p;
    p.n_tokens = n_tokens;
    p.n_used = n_used;
    p.x_per_token = per_slot ? n_used : 1;
    p.x_stride = k + 3;
    p.x_token_stride = p.x_per_token * p.x_stride + 5;
    p.y_stride = rows + 2;
    p.y_token_stride = n_used * p.y_stride + 7;
    p.x = random_activations(n_tokens * p.x_token_stride, 1, seed);
    return p;
}

// The definition: per expert, one matmul() of the inputs of the pairs that
// chose it (in pair order), each result copied to its pair's output.
std::vector<float> per_expert(const Experts& w, mm::Packing packing, const IdProblem& p, const std::vector<int32_t>& ids,
                              Isa isa) {
    std::vector<float> y(static_cast<size_t>(p.n_tokens * p.y_token_stride), -7.0f);
    for (int64_t e = 0; e < w.n_expert; ++e) {
        std::vector<int64_t> pairs;
        for (int64_t i = 0; i < p.n_tokens * p.n_used; ++i)
            if (ids[static_cast<size_t>(i)] == e) pairs.push_back(i);
        if (pairs.empty()) continue;
        const auto n = static_cast<int64_t>(pairs.size());
        std::vector<float> xs(static_cast<size_t>(n * w.k)), ys(static_cast<size_t>(n * w.rows));
        for (int64_t c = 0; c < n; ++c) {
            const int64_t t = pairs[static_cast<size_t>(c)] / p.n_used, j = pairs[static_cast<size_t>(c)] % p.n_used;
            std::memcpy(xs.data() + c * w.k, p.x.data() + t * p.x_token_stride + (j % p.x_per_token) * p.x_stride,
                        static_cast<size_t>(w.k) * sizeof(float));
        }
        mm::MatmulArgs a;
        a.w = w.matrix(e, packing);
        a.x = xs.data();
        a.n = n;
        a.x_stride = w.k;
        a.y = ys.data();
        a.y_stride = w.rows;
        a.r0 = 0;
        a.r1 = w.rows;
        mm::matmul(a, isa, nullptr);
        for (int64_t c = 0; c < n; ++c) {
            const int64_t t = pairs[static_cast<size_t>(c)] / p.n_used, j = pairs[static_cast<size_t>(c)] % p.n_used;
            std::memcpy(y.data() + t * p.y_token_stride + j * p.y_stride, ys.data() + c * w.rows,
                        static_cast<size_t>(w.rows) * sizeof(float));
        }
    }
    return y;
}

std::vector<float> indexed(const Experts& w, mm::Packing packing, const IdProblem& p, const std::vector<int32_t>& ids,
                           Isa isa, mm::MatmulIdWorkspace& ws, cria::cpu::ThreadPool* pool) {
    std::vector<float> y(static_cast<size_t>(p.n_tokens * p.y_token_stride), -7.0f);
    mm::MatmulIdArgs a;
    a.w = w.stack(packing);
    a.ids = ids.data();
    a.n_used = p.n_used;
    a.n_tokens = p.n_tokens;
    a.x = p.x.data();
    a.x_per_token = p.x_per_token;
    a.x_stride = p.x_stride;
    a.x_token_stride = p.x_token_stride;
    a.y = y.data();
    a.y_stride = p.y_stride;
    a.y_token_stride = p.y_token_stride;
    mm::matmul_id(a, ws, isa, pool);
    return y;
}

// Routes n_tokens tokens to n_used experts each among those of `allowed`;
// token 0 chooses allowed[0] twice when n_used > 1 (ggml allows repeats).
std::vector<int32_t> route(int64_t n_tokens, int64_t n_used, const std::vector<int32_t>& allowed, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> ids(static_cast<size_t>(n_tokens * n_used));
    for (auto& id : ids) id = allowed[rng() % allowed.size()];
    if (n_used > 1) ids[0] = ids[1] = allowed[0];
    return ids;
}

class MatmulIdTypes : public ::testing::TestWithParam<ElementType> {};

TEST_P(MatmulIdTypes, EqualsOneMatmulPerPair) {
    const ElementType type = GetParam();
    const uint32_t bs = cria::element_type_info(type)->block_size;
    const int64_t k = bs == 1 ? 40 : bs == 256 ? 512 : 96;
    const int64_t n_expert = 7, rows = 37;
    Experts w(type, n_expert, rows, k, 11);
    // Experts 2 and 5 are never chosen: poisoned, their bytes must not be read.
    w.poison(2);
    w.poison(5);
    const std::vector<int32_t> allowed{0, 1, 3, 4, 6};
    mm::MatmulIdWorkspace ws;
    cria::cpu::ThreadPool two(2);
    std::vector<mm::Packing> packings{mm::Packing::None};
    if (!w.packed.empty()) packings.push_back(mm::Packing::Rows16);
    struct Case { int64_t n_tokens, n_used; bool per_slot; };
    // 1 token (decode), a few, and 150 tokens x 3 slots over 5 experts: about
    // 90 pairs per expert, more than one task's 64 columns.
    for (const Case c : {Case{1, 3, false}, Case{1, 3, true}, Case{5, 1, false}, Case{6, 4, true}, Case{150, 3, false},
                         Case{150, 3, true}})
        for (mm::Packing packing : packings)
            for (Isa isa : levels_here()) {
                SCOPED_TRACE(std::string(cria::element_type_name(type)) + " " + std::string(cria::cpu::isa_name(isa)) +
                             (packing == mm::Packing::None ? " plain" : " packed") + " tokens " +
                             std::to_string(c.n_tokens) + " used " + std::to_string(c.n_used) +
                             (c.per_slot ? " input per slot" : " shared input"));
                const IdProblem p = make_problem(k, rows, c.n_tokens, c.n_used, c.per_slot, 21);
                const std::vector<int32_t> ids = route(c.n_tokens, c.n_used, allowed, 31);
                const std::vector<float> want = per_expert(w, packing, p, ids, isa);
                const std::vector<float> one = indexed(w, packing, p, ids, isa, ws, nullptr);
                const std::vector<float> both = indexed(w, packing, p, ids, isa, ws, &two);
                for (size_t i = 0; i < want.size(); ++i) {
                    ASSERT_TRUE(!std::isnan(want[i])) << i;  // the definition never met a poisoned expert
                    ASSERT_EQ(std::memcmp(&one[i], &want[i], sizeof(float)), 0) << i << ": " << one[i] << " vs " << want[i];
                    ASSERT_EQ(std::memcmp(&both[i], &want[i], sizeof(float)), 0) << i << ": " << both[i] << " vs " << want[i];
                }
            }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulIdTypes, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<ElementType>& i) {
                             return std::string(cria::element_type_name(i.param));
                         });

TEST(MatmulId, ExpertNoTokenChoseIsNeverRead) {
    // Every expert but 4 poisoned; all pairs choose 4.
    Experts w(ElementType::Q4_0, 9, 33, 64, 5);
    for (int64_t e = 0; e < 9; ++e)
        if (e != 4) w.poison(e);
    const IdProblem p = make_problem(64, 33, 3, 2, false, 8);
    const std::vector<int32_t> ids(6, 4);
    mm::MatmulIdWorkspace ws;
    const auto y = indexed(w, mm::Packing::None, p, ids, cria::cpu::best_isa(), ws, nullptr);
    const auto want = per_expert(w, mm::Packing::None, p, ids, cria::cpu::best_isa());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(std::memcmp(&y[i], &want[i], sizeof(float)), 0) << i;
}

TEST(MatmulId, TallExpertsSplitIntoSeveralRowTasks) {
    // 1100 rows: more than one task's rows, the last task not a whole group.
    for (ElementType type : {ElementType::Q4_0, ElementType::Q4_1}) {
        Experts w(type, 3, 1100, 64, 9);
        const IdProblem p = make_problem(64, 1100, 20, 2, false, 10);
        const std::vector<int32_t> ids = route(20, 2, {0, 1, 2}, 11);
        mm::MatmulIdWorkspace ws;
        cria::cpu::ThreadPool two(2);
        std::vector<mm::Packing> packings{mm::Packing::None};
        if (!w.packed.empty()) packings.push_back(mm::Packing::Rows16);
        for (mm::Packing packing : packings) {
            const auto want = per_expert(w, packing, p, ids, cria::cpu::best_isa());
            const auto got = indexed(w, packing, p, ids, cria::cpu::best_isa(), ws, &two);
            for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << i;
        }
    }
}

TEST(MatmulId, WorkspaceStopsGrowing) {
    Experts w(ElementType::Q8_0, 4, 20, 64, 3);
    mm::MatmulIdWorkspace ws;
    const IdProblem big = make_problem(64, 20, 40, 2, true, 1);
    const IdProblem small = make_problem(64, 20, 1, 2, true, 2);
    (void)indexed(w, mm::Packing::None, big, route(40, 2, {0, 1, 2, 3}, 4), cria::cpu::best_isa(), ws, nullptr);
    const size_t after_big = ws.bytes();
    for (int i = 0; i < 3; ++i)
        (void)indexed(w, mm::Packing::None, small, route(1, 2, {0, 3}, 5 + i), cria::cpu::best_isa(), ws, nullptr);
    EXPECT_EQ(ws.bytes(), after_big);
}

TEST(MatmulId, RefusesBadArguments) {
    Experts w(ElementType::Q4_0, 3, 16, 64, 2);
    const IdProblem p = make_problem(64, 16, 2, 2, false, 3);
    mm::MatmulIdWorkspace ws;
    const auto run = [&](std::vector<int32_t> ids, auto&& edit) {
        mm::MatmulIdArgs a;
        a.w = w.stack(mm::Packing::None);
        a.ids = ids.data();
        a.n_used = 2;
        a.n_tokens = 2;
        a.x = p.x.data();
        a.x_per_token = 1;
        a.x_token_stride = p.x_token_stride;
        std::vector<float> y(static_cast<size_t>(2 * p.y_token_stride));
        a.y = y.data();
        a.y_stride = p.y_stride;
        a.y_token_stride = p.y_token_stride;
        edit(a);
        mm::matmul_id(a, ws, nullptr);
    };
    const auto same = [](mm::MatmulIdArgs&) {};
    EXPECT_NO_THROW(run({0, 1, 2, 0}, same));
    EXPECT_THROW(run({0, 1, 3, 0}, same), cria::Error);   // id past the last expert
    EXPECT_THROW(run({0, -1, 2, 0}, same), cria::Error);  // negative id
    EXPECT_THROW(run({0, 1, 2, 0}, [](mm::MatmulIdArgs& a) { a.x_per_token = 3; }), cria::Error);
    EXPECT_THROW(run({0, 1, 2, 0}, [](mm::MatmulIdArgs& a) { a.w.expert_stride = 10; }), cria::Error);
    EXPECT_THROW(run({0, 1, 2, 0}, [](mm::MatmulIdArgs& a) { a.w.k = 48; }), cria::Error);  // not whole blocks
    EXPECT_THROW(run({0, 1, 2, 0}, [](mm::MatmulIdArgs& a) { a.y_stride = 3; }), cria::Error);
    EXPECT_THROW(run({0, 1, 2, 0}, [](mm::MatmulIdArgs& a) { a.w.packing = mm::Packing::Rows16; a.w.type = ElementType::Q5_0; }),
                 cria::Error);
}

}  // namespace
