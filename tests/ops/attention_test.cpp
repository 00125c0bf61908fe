// Flash-style attention of CpuOps against the reference that materialises
// every score in double (ReferenceOps::attention), for each KV cache type,
// grouped-query ratios 1/2/4, causal, sliding-window and full masks, one and
// several query tokens, every ISA level and several threads.
// K/V are quantised once and both sides read the same bytes, so the only
// difference is float vs double arithmetic and the order of the online
// softmax: outputs (weighted means of values in [-2, 2]) agree to abs 2e-5 +
// rel 1e-4.

#include <memory>
#include <vector>

#include "cria/core/float16.h"
#include "cria/quant/quantize.h"
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

struct Mask {
    const char* name;
    bool causal;
    int64_t window;
};

TEST(Attention, MatchesMaterialisedReference) {
    const int64_t head_dim = 64, head_dim_v = 96, n_kv = 150, n_kv_heads = 2;
    const std::vector<ElementType> types{ElementType::F32, ElementType::F16, ElementType::BF16, ElementType::Q8_0,
                                         ElementType::Q4_0};
    const std::vector<Mask> masks{{"causal", true, 0}, {"sliding window 37", true, 37}, {"full", false, 0}};
    std::vector<std::unique_ptr<cpu::ThreadPool>> pools;
    pools.push_back(std::make_unique<cpu::ThreadPool>(1));
    pools.push_back(std::make_unique<cpu::ThreadPool>(3));
    ReferenceOps ref;
    int compared = 0;
    for (ElementType type : types) {
        const Cache k = make_cache(type, head_dim, n_kv_heads, n_kv, 50);
        const Cache v = make_cache(type, head_dim_v, n_kv_heads, n_kv, 51);
        for (int64_t ratio : {1, 2, 4}) {
            const int64_t n_heads = n_kv_heads * ratio;
            for (int64_t n_tokens : {1, 7}) {
                const auto q = random_floats(static_cast<size_t>(head_dim * n_heads * n_tokens), 52);
                const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {head_dim, n_heads, n_tokens});
                for (const Mask& mask : masks) {
                    SCOPED_TRACE(::testing::Message() << element_type_name(type) << " gqa " << ratio << " tokens "
                                                      << n_tokens << " " << mask.name);
                    AttentionParams p;
                    p.scale = 0.125f;
                    p.causal = mask.causal;
                    p.window = mask.window;
                    const size_t out_size = static_cast<size_t>(head_dim_v * n_heads * n_tokens);
                    std::vector<float> want(out_size), got(out_size);
                    const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {head_dim_v, n_heads, n_tokens});
                    const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {head_dim_v, n_heads, n_tokens});
                    ref.attention(vq, k.view, v.view, p, vw);
                    for (cpu::Isa isa : test::runnable_isas()) {
                        cpu::ScopedIsaLimit limit(isa);
                        for (auto& pool : pools) {
                            SCOPED_TRACE(::testing::Message() << cpu::isa_name(isa) << " threads " << pool->size());
                            std::fill(got.begin(), got.end(), NAN);
                            CpuOps ops(*pool);
                            ops.attention(vq, k.view, v.view, p, vg);
                            ASSERT_TRUE(all_close(got, want, 2e-5, 1e-4));
                            ++compared;
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(compared, 0);
}

// Positions given explicitly (a cache longer than the query), soft-capping
// and attention sinks.
TEST(Attention, PositionsSoftcapAndSinks) {
    const int64_t head_dim = 32, n_kv = 70, n_kv_heads = 1, n_heads = 4, n_tokens = 3;
    const Cache k = make_cache(ElementType::F16, head_dim, n_kv_heads, n_kv, 60);
    const Cache v = make_cache(ElementType::F16, head_dim, n_kv_heads, n_kv, 61);
    const auto q = random_floats(static_cast<size_t>(head_dim * n_heads * n_tokens), 62, -4.0f, 4.0f);
    const auto sinks = random_floats(static_cast<size_t>(n_heads), 63, -1.0f, 6.0f);
    const std::vector<int32_t> positions{0, 40, 69};
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {head_dim, n_heads, n_tokens});
    std::vector<float> want(static_cast<size_t>(head_dim * n_heads * n_tokens)), got(want.size());
    const auto vw = TensorView::contiguous(ElementType::F32, want.data(), {head_dim, n_heads, n_tokens});
    const auto vg = TensorView::contiguous(ElementType::F32, got.data(), {head_dim, n_heads, n_tokens});
    AttentionParams p;
    p.scale = 0.3f;
    p.softcap = 20.0f;
    p.sinks = sinks.data();
    p.positions = positions.data();
    p.window = 50;
    ReferenceOps ref;
    ref.attention(vq, k.view, v.view, p, vw);
    cpu::ThreadPool pool(2);
    for (cpu::Isa isa : test::runnable_isas()) {
        cpu::ScopedIsaLimit limit(isa);
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuOps ops(pool);
        ops.attention(vq, k.view, v.view, p, vg);
        EXPECT_TRUE(all_close(got, want, 2e-5, 1e-4));
    }
}

TEST(Attention, RejectsMismatchedShapes) {
    cpu::ThreadPool pool(1);
    CpuOps ops(pool);
    std::vector<float> q(64 * 3), k(64 * 2 * 4), v(64 * 2 * 4), out(64 * 3);
    const auto vq = TensorView::contiguous(ElementType::F32, q.data(), {64, 3, 1});
    const auto vk = TensorView::contiguous(ElementType::F32, k.data(), {64, 2, 4});
    const auto vv = TensorView::contiguous(ElementType::F32, v.data(), {64, 2, 4});
    const auto vo = TensorView::contiguous(ElementType::F32, out.data(), {64, 3, 1});
    EXPECT_THROW(ops.attention(vq, vk, vv, AttentionParams{}, vo), Error);  // 3 heads over 2 kv heads
    std::vector<uint8_t> q4(1000);
    const auto vk4 = TensorView::contiguous(ElementType::Q4_1, q4.data(), {64, 2, 4});
    const auto vq2 = TensorView::contiguous(ElementType::F32, q.data(), {64, 2, 1});
    const auto vo2 = TensorView::contiguous(ElementType::F32, out.data(), {64, 2, 1});
    EXPECT_THROW(ops.attention(vq2, vk4, vv, AttentionParams{}, vo2), Error);  // unsupported cache type
}

}  // namespace
}  // namespace cria::ops
