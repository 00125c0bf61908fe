// The tiled attention path (kTiledAttentionMinTokens query tokens or more)
// against the reference that materialises every score in double
// (ReferenceOps::attention), on sizes that do not fit the tiles: token
// counts that the tiles (up to 256 rows / group tokens) do not divide, key
// counts that the 64-key blocks do not divide, head sizes that are not a
// multiple of 16, grouped-query ratios 1/2/4/8, window edges, a cache longer
// than the prompt, positions out of order (tokens of two sequences
// interleaved), soft-capping with sinks, and edge shapes (head size 1, 64
// query heads per KV head, one cached key, one key past a block). Every ISA
// level; 1 and 3 threads (which tile differently) must agree bit for bit.
// Tolerance as in attention_test.cpp (same float vs double sums).

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cria/quant/quantize.h"
#include "ops/attention_tiled.h"
#include "ops_fixture.h"

namespace cria::ops {
namespace {

using test::all_close;
using test::random_floats;

struct Cache {
    std::vector<uint8_t> bytes;
    TensorView view;
};

Cache make_cache(ElementType type, int64_t dim, int64_t n_kv_heads, int64_t n_kv, uint32_t seed) {
    const auto values = random_floats(static_cast<size_t>(dim * n_kv_heads * n_kv), seed);
    Cache c;
    c.bytes.resize(*row_size_bytes(type, static_cast<uint64_t>(dim)) * static_cast<size_t>(n_kv_heads * n_kv));
    quant::quantize_rows(type, values.data(), c.bytes.data(), n_kv_heads * n_kv, dim);
    c.view = TensorView::contiguous(type, c.bytes.data(), {dim, n_kv_heads, n_kv});
    return c;
}

struct Case {
    std::string name;
    ElementType type;
    int64_t head_dim, head_dim_v, n_kv_heads, ratio, n_tokens, n_kv;
    bool causal;
    int64_t window;
    float softcap;
    bool sinks;
    bool shuffled_positions;  // two sequences' tokens interleaved, explicit positions
};

void check(const Case& c) {
    SCOPED_TRACE(c.name);
    ASSERT_GE(c.n_tokens, kTiledAttentionMinTokens);  // the tiled path, not the row path
    const int64_t n_heads = c.n_kv_heads * c.ratio;
    const Cache k = make_cache(c.type, c.head_dim, c.n_kv_heads, c.n_kv, 70);
    const Cache v = make_cache(c.type, c.head_dim_v, c.n_kv_heads, c.n_kv, 71);
    const auto q = random_floats(static_cast<size_t>(c.head_dim * n_heads * c.n_tokens), 72, -3.0f, 3.0f);
    const auto sinks = random_floats(static_cast<size_t>(n_heads), 73, -1.0f, 5.0f);
    std::vector<int32_t> positions;
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        // Even tokens count up from 0, odd ones from the middle of the cache.
        const int64_t pos = t % 2 == 0 ? t / 2 : c.n_kv / 2 + t / 2;
        positions.push_back(static_cast<int32_t>(pos));
    }
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {c.head_dim, n_heads, c.n_tokens});
    AttentionParams p;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    p.causal = c.causal;
    p.window = c.window;
    p.softcap = c.softcap;
    p.sinks = c.sinks ? sinks.data() : nullptr;
    p.positions = c.shuffled_positions ? positions.data() : nullptr;
    const size_t out_size = static_cast<size_t>(c.head_dim_v * n_heads * c.n_tokens);
    std::vector<float> want(out_size), got(out_size), first(out_size);
    const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {c.head_dim_v, n_heads, c.n_tokens});
    const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {c.head_dim_v, n_heads, c.n_tokens});
    ReferenceOps().attention(vq, k.view, v.view, p, vw);
    cpu::ThreadPool one(1), three(3);
    for (cpu::Isa isa : test::runnable_isas()) {
        cpu::ScopedIsaLimit limit(isa);
        SCOPED_TRACE(cpu::isa_name(isa));
        std::fill(got.begin(), got.end(), NAN);
        CpuOps(one).attention(vq, k.view, v.view, p, vg);
        ASSERT_TRUE(all_close(got, want, 2e-5, 1e-4));
        first = got;
        std::fill(got.begin(), got.end(), NAN);
        CpuOps(three).attention(vq, k.view, v.view, p, vg);
        EXPECT_EQ(std::memcmp(first.data(), got.data(), out_size * sizeof(float)), 0) << "1 and 3 threads differ";
    }
}

TEST(AttentionTiled, PromptAttendingToItself) {
    // n_tokens == n_kv: the causal prompt of a prefill.
    for (int64_t ratio : {1, 2, 4, 8}) {
        for (int64_t n : {4, 67, 130}) {
            check({"causal prompt", ElementType::F16, 40, 40, 2, ratio, n, n, true, 0, 0.0f, false, false});
        }
    }
}

TEST(AttentionTiled, CacheTypesAndHeadSizes) {
    for (ElementType type : {ElementType::F32, ElementType::F16, ElementType::BF16, ElementType::Q8_0, ElementType::Q4_0}) {
        // A cache longer than the prompt (earlier tokens), value heads wider than key heads.
        check({std::string(element_type_name(type)), type, 64, 96, 2, 2, 21, 150, true, 0, 0.0f, false, false});
    }
}

TEST(AttentionTiled, WindowsAndFullMask) {
    for (int64_t ratio : {1, 4}) {
        check({"window 37", ElementType::F16, 32, 32, 1, ratio, 100, 170, true, 37, 0.0f, false, false});
        check({"window 64", ElementType::F16, 32, 32, 1, ratio, 100, 170, true, 64, 0.0f, false, false});
        check({"window 1", ElementType::F16, 32, 32, 1, ratio, 9, 9, true, 1, 0.0f, false, false});
        check({"full", ElementType::F16, 32, 32, 1, ratio, 33, 77, false, 0, 0.0f, false, false});
        check({"full, window 20", ElementType::F32, 32, 32, 1, ratio, 33, 77, false, 20, 0.0f, false, false});
    }
}

TEST(AttentionTiled, InterleavedPositionsSoftcapAndSinks) {
    for (int64_t ratio : {1, 2, 8}) {
        check({"interleaved", ElementType::F16, 48, 48, 2, ratio, 41, 140, true, 0, 0.0f, false, true});
        check({"interleaved, window 30", ElementType::F16, 48, 48, 2, ratio, 41, 140, true, 30, 0.0f, false, true});
        check({"softcap and sinks", ElementType::BF16, 48, 48, 2, ratio, 70, 70, true, 0, 30.0f, true, false});
    }
}

TEST(AttentionTiled, EdgeShapes) {
    check({"head size 1", ElementType::F32, 1, 3, 1, 1, 5, 5, true, 0, 0.0f, false, false});
    check({"64 query heads per kv head", ElementType::F16, 16, 16, 1, 64, 9, 9, true, 0, 0.0f, false, false});
    check({"one cached key", ElementType::F16, 16, 16, 1, 2, 4, 1, false, 0, 0.0f, false, true});
    check({"exactly one block", ElementType::F16, 32, 32, 2, 2, 64, 64, true, 0, 0.0f, false, false});
    check({"one key past a block", ElementType::F16, 32, 32, 2, 2, 65, 65, true, 0, 0.0f, false, false});
}

}  // namespace
}  // namespace cria::ops
