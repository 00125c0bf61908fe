// Chunked attention (llama4's): a query at position p sees only its own
// chunk [p - p % n_chunk, p] of its sequence; earlier chunks are freed.
// Checked against a plain loop.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

TEST(KvChunked, QueriesSeeOnlyTheirChunk) {
    constexpr uint32_t kChunk = 4;
    KvCacheParams p = test::kv_params(32, 1);
    p.head_dim = p.head_dim_v = 8;
    p.n_chunk = kChunk;
    KvCache c(p);
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd;
    const int n = 20;
    // Two sequences, interleaved; positions count per sequence (0..9 each).
    std::vector<int32_t> pos(n);
    std::vector<uint64_t> seqs(n);
    for (int i = 0; i < n; ++i) {
        pos[i] = i / 2;
        seqs[i] = uint64_t{1} << (i % 2);
    }
    ASSERT_TRUE(c.place({n, pos.data(), seqs.data()}));
    std::vector<float> k(n * 8), v(n * 8), q(n * 2 * 8), out(n * 2 * 8);
    for (auto* buf : {&k, &v, &q})
        for (auto& x : *buf) x = nd(rng);
    c.store(0, ops::TensorView::contiguous(ElementType::F32, k.data(), {8, 1, n}),
            ops::TensorView::contiguous(ElementType::F32, v.data(), {8, 1, n}));
    ops::AttentionParams ap;
    ap.scale = 0.35f;
    c.attend(ops, 0, ops::TensorView::contiguous(ElementType::F32, q.data(), {8, 2, n}), ap, 0,
             ops::TensorView::contiguous(ElementType::F32, out.data(), {8, 2, n}));
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < 2; ++h) {
            std::vector<double> w;
            std::vector<int> keys;
            for (int j = 0; j < n; ++j) {
                if (seqs[j] != seqs[t] || pos[j] > pos[t] || pos[j] < pos[t] - pos[t] % static_cast<int>(kChunk)) continue;
                double s = 0;
                for (int d = 0; d < 8; ++d) s += double(q[(t * 2 + h) * 8 + d]) * k[j * 8 + d];
                w.push_back(s * 0.35);
                keys.push_back(j);
            }
            double mx = *std::max_element(w.begin(), w.end()), sum = 0;
            for (double& x : w) sum += (x = std::exp(x - mx));
            for (int d = 0; d < 8; ++d) {
                double y = 0;
                for (size_t i = 0; i < keys.size(); ++i) y += w[i] / sum * v[keys[i] * 8 + d];
                EXPECT_NEAR(out[(t * 2 + h) * 8 + d], y, 1e-5) << "token " << t << " head " << h;
            }
        }
    // Position 10 of sequence 0 starts chunk 8..11: everything before 8 is freed.
    const int32_t p10 = 10;
    const uint64_t s0 = 1;
    ASSERT_TRUE(c.place({1, &p10, &s0}));
    EXPECT_EQ(c.seq_pos_min(0), 8);
    EXPECT_EQ(c.seq_pos_min(1), 0);  // sequence 1 had no new token
}

TEST(KvChunked, SavedSectionIsItsOwnKindAndChunksExcludeAWindow) {
    KvCacheParams p = test::kv_params(16);
    p.n_chunk = 4;
    KvCache chunked(p);
    ASSERT_TRUE(test::decode(chunked, 0, 0, 3, 1.0f));
    std::vector<Section> s;
    chunked.save_seq(0, s);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].tag, KvCache::kTagChunked);
    KvCache full(test::kv_params(16));
    EXPECT_THROW(full.read_seq(0, s, {}), Error);
    auto loaded = chunked.read_seq(1, s, {});
    chunked.load_seq(1, *loaded);
    EXPECT_EQ(chunked.seq_pos_max(1), 2);
    p.n_swa = 8;
    EXPECT_THROW(KvCache{p}, Error);
}

}  // namespace
}  // namespace cria::memory
