// KvCache::store takes K and V whose tokens are further apart than one
// cache row (each token's heads dense), as a joined QKV product's output
// read in place: the cache then holds the same bytes, in F32 and F16, as
// after storing dense copies, and a store whose heads are not dense within
// a token is refused with a clear error.

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"

namespace cria::memory {
namespace {

constexpr int kHeadDim = 8, kHeads = 2, kTokens = 5;
constexpr int64_t kRow = kHeadDim * kHeads;

KvCacheParams params(ElementType type) {
    KvCacheParams p;
    p.n_cells = 16;
    p.n_layer = 1;
    p.n_head_kv = kHeads;
    p.head_dim = p.head_dim_v = kHeadDim;
    p.type_k = p.type_v = type;
    return p;
}

// The attention output of one query per token over the stored tokens.
std::vector<float> stored_then_attended(ElementType type, const ops::TensorView& k, const ops::TensorView& v) {
    KvCache c(params(type));
    std::vector<int32_t> pos(kTokens);
    std::vector<uint64_t> seqs(kTokens, 1);
    for (int i = 0; i < kTokens; ++i) pos[i] = i;
    EXPECT_TRUE(c.place({kTokens, pos.data(), seqs.data()}));
    c.store(0, k, v);
    cpu::ThreadPool pool(1);
    ops::CpuOps ops(pool);
    std::vector<float> q(kTokens * kRow), out(kTokens * kRow);
    for (size_t i = 0; i < q.size(); ++i) q[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
    ops::AttentionParams ap;
    ap.scale = 0.3f;
    c.attend(ops, 0, ops::TensorView::contiguous(ElementType::F32, q.data(), {kHeadDim, kHeads, kTokens}), ap, 0,
             ops::TensorView::contiguous(ElementType::F32, out.data(), {kHeadDim, kHeads, kTokens}));
    return out;
}

TEST(KvCacheStridedStore, TokensApartStoreTheSameAsDenseTokens) {
    // A joined output per token: [q (3 rows of kRow) | k | v].
    constexpr int64_t kTotal = 5 * kRow;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    std::vector<float> joined(kTotal * kTokens), k(kRow * kTokens), v(kRow * kTokens);
    for (float& x : joined) x = nd(rng);
    for (int t = 0; t < kTokens; ++t) {
        std::memcpy(&k[t * kRow], &joined[t * kTotal + 3 * kRow], kRow * sizeof(float));
        std::memcpy(&v[t * kRow], &joined[t * kTotal + 4 * kRow], kRow * sizeof(float));
    }
    const auto strided = [&](int64_t first) {
        ops::TensorView t = ops::TensorView::contiguous(ElementType::F32, joined.data() + first, {kHeadDim, kHeads, kTokens});
        t.nb[2] = kTotal * sizeof(float);
        t.nb[3] = t.nb[2] * kTokens;
        return t;
    };
    for (ElementType type : {ElementType::F32, ElementType::F16}) {
        const auto dense = stored_then_attended(type, ops::TensorView::contiguous(ElementType::F32, k.data(), {kHeadDim, kHeads, kTokens}),
                                                ops::TensorView::contiguous(ElementType::F32, v.data(), {kHeadDim, kHeads, kTokens}));
        const auto apart = stored_then_attended(type, strided(3 * kRow), strided(4 * kRow));
        ASSERT_EQ(dense.size(), apart.size());
        EXPECT_EQ(0, std::memcmp(dense.data(), apart.data(), dense.size() * sizeof(float))) << element_type_name(type);
    }
}

TEST(KvCacheStridedStore, HeadsApartWithinATokenAreRefused) {
    KvCache c(params(ElementType::F32));
    std::vector<int32_t> pos(kTokens);
    std::vector<uint64_t> seqs(kTokens, 1);
    for (int i = 0; i < kTokens; ++i) pos[i] = i;
    ASSERT_TRUE(c.place({kTokens, pos.data(), seqs.data()}));
    std::vector<float> buf(4 * kRow * kTokens, 1.0f);
    ops::TensorView heads_apart = ops::TensorView::contiguous(ElementType::F32, buf.data(), {kHeadDim, kHeads, kTokens});
    heads_apart.nb[1] = 2 * kHeadDim * sizeof(float);
    heads_apart.nb[2] = 4 * kRow * sizeof(float);
    const ops::TensorView dense = ops::TensorView::contiguous(ElementType::F32, buf.data(), {kHeadDim, kHeads, kTokens});
    EXPECT_THROW(c.store(0, heads_apart, dense), Error);
    EXPECT_THROW(c.store(0, dense, heads_apart), Error);
}

}  // namespace
}  // namespace cria::memory
