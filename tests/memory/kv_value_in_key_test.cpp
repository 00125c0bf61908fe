// The KV cache whose values live in its keys (value_in_key, for multi-head
// latent attention): attention equals a plain cache that stores the same
// prefix as explicit values (scattered cells, two sequences, plain and
// quantized rows), nothing is stored for V, a context shift turns only the
// roped tail of each key (rope_first), saved sequences round-trip, and
// shapes that cannot work are refused.

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"

namespace cria::memory {
namespace {

constexpr uint32_t kHeadDim = 64, kValueDim = 32;

KvCacheParams latent_params(ElementType type, bool value_in_key) {
    KvCacheParams p;
    p.n_cells = 40;
    p.n_layer = 2;
    p.n_head_kv = 1;
    p.head_dim = kHeadDim;
    p.head_dim_v = kValueDim;
    p.type_k = p.type_v = type;
    p.value_in_key = value_in_key;
    p.rope_first = value_in_key ? kValueDim : 0;
    return p;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
}

// Places n tokens (sequences alternating 0/1, positions counting per
// sequence, so each sequence's cells are scattered) and stores keys whose
// first kValueDim values are also given as explicit values.
void fill(KvCache& c, uint32_t layer, const std::vector<float>& keys, int n, bool place) {
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::vector<uint64_t> seqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        pos[static_cast<size_t>(i)] = i / 2;
        seqs[static_cast<size_t>(i)] = uint64_t{1} << (i % 2);
    }
    if (place) ASSERT_TRUE(c.place({n, pos.data(), seqs.data()}));
    std::vector<float> values(static_cast<size_t>(n) * kValueDim);
    for (int t = 0; t < n; ++t)
        std::memcpy(values.data() + t * kValueDim, keys.data() + t * kHeadDim, kValueDim * sizeof(float));
    c.store(layer, ops::TensorView::contiguous(ElementType::F32, keys.data(), {kHeadDim, 1, n}),
            ops::TensorView::contiguous(ElementType::F32, values.data(), {kValueDim, 1, n}));
}

std::vector<float> attend(KvCache& c, ops::Ops& ops, uint32_t layer, const std::vector<float>& q, int n) {
    std::vector<float> out(static_cast<size_t>(n) * 3 * kValueDim);
    ops::AttentionParams ap;
    ap.scale = 0.2f;
    c.attend(ops, layer, ops::TensorView::contiguous(ElementType::F32, q.data(), {kHeadDim, 3, n}), ap, 0,
             ops::TensorView::contiguous(ElementType::F32, out.data(), {kValueDim, 3, n}));
    return out;
}

TEST(KvCacheValueInKey, AttentionEqualsACacheWithExplicitValues) {
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    const int n = 14;
    for (ElementType type : {ElementType::F32, ElementType::F16, ElementType::Q8_0}) {
        SCOPED_TRACE(element_type_name(type));
        KvCache latent(latent_params(type, true)), plain(latent_params(type, false));
        for (uint32_t layer = 0; layer < 2; ++layer) {
            const auto keys = random_floats(static_cast<size_t>(n) * kHeadDim, 10 + layer);
            fill(latent, layer, keys, n, layer == 0);
            fill(plain, layer, keys, n, layer == 0);
        }
        const auto q = random_floats(static_cast<size_t>(n) * 3 * kHeadDim, 20);
        for (uint32_t layer = 0; layer < 2; ++layer) EXPECT_EQ(attend(latent, ops, layer, q, n), attend(plain, ops, layer, q, n));
        // Only the keys take memory.
        EXPECT_EQ(latent.v_cell_bytes(), 0u);
        EXPECT_EQ(latent.memory_bytes(), latent.k_cell_bytes() * 40 * 2);
        EXPECT_LT(latent.memory_bytes(), plain.memory_bytes());
    }
}

TEST(KvCacheValueInKey, ShiftTurnsOnlyTheRopedTail) {
    cpu::ThreadPool pool(1);
    ops::CpuOps ops(pool);
    KvCache c(latent_params(ElementType::F32, true));
    const int n = 6;
    const auto keys = random_floats(static_cast<size_t>(n) * kHeadDim, 30);
    fill(c, 0, keys, n, true);
    fill(c, 1, keys, n, false);
    ASSERT_TRUE(c.seq_add(0, 0, -1, 5));
    ops::RopeParams rope;
    rope.n_dims = static_cast<int>(kHeadDim - kValueDim);
    c.apply_shift(ops, [&](uint32_t) { return rope; });
    const auto saved = c.seq_save(0);
    ASSERT_EQ(saved.positions, (std::vector<int32_t>{5, 6, 7}));
    for (int i = 0; i < 3; ++i) {
        const float* before = keys.data() + (2 * i) * kHeadDim;  // sequence 0's tokens are 0, 2, 4
        std::vector<float> after(kHeadDim);
        std::memcpy(after.data(), saved.k[0].data() + i * c.k_cell_bytes(), c.k_cell_bytes());
        for (uint32_t d = 0; d < kValueDim; ++d) EXPECT_EQ(after[d], before[d]) << "the latent must not turn";
        // The tail turned by the delta, as rope at position 5 turns it.
        std::vector<float> tail(before + kValueDim, before + kHeadDim);
        const int32_t delta = 5;
        const auto tv = ops::TensorView::contiguous(ElementType::F32, tail.data(), {kHeadDim - kValueDim, 1, 1});
        ops.rope(tv, &delta, rope, tv);
        for (uint32_t d = 0; d < kHeadDim - kValueDim; ++d) EXPECT_NEAR(after[kValueDim + d], tail[d], 1e-5);
    }
}

TEST(KvCacheValueInKey, SavedSequencesRoundTrip) {
    cpu::ThreadPool pool(1);
    ops::CpuOps ops(pool);
    KvCache c(latent_params(ElementType::F16, true));
    const int n = 8;
    const auto keys = random_floats(static_cast<size_t>(n) * kHeadDim, 40);
    fill(c, 0, keys, n, true);
    fill(c, 1, keys, n, false);
    const auto saved = c.seq_save(1);
    ASSERT_EQ(saved.v.size(), 2u);
    EXPECT_TRUE(saved.v[0].empty());
    c.seq_load(2, saved);
    const auto again = c.seq_save(2);
    EXPECT_EQ(again.k, saved.k);
    EXPECT_EQ(again.positions, saved.positions);
}

TEST(KvCacheValueInKey, RefusesShapesThatCannotWork) {
    KvCacheParams p = latent_params(ElementType::F32, true);
    p.head_dim_v = kHeadDim + 2;  // values wider than the keys
    EXPECT_THROW(KvCache{p}, Error);
    p = latent_params(ElementType::Q8_0, true);
    p.head_dim_v = 16;  // not whole Q8_0 blocks of the key rows
    EXPECT_THROW(KvCache{p}, Error);
    p = latent_params(ElementType::F32, true);
    p.rope_first = kHeadDim;
    EXPECT_THROW(KvCache{p}, Error);
}

}  // namespace
}  // namespace cria::memory
