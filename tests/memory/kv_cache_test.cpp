// KV cache bookkeeping (cells, sequences, positions, shifts, the sliding
// window) and masked attention over scattered cells against a plain loop.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cria/core/error.h"
#include "cria/cpu/thread_pool.h"
#include "cria/memory/kv_cache.h"
#include "cria/ops/cpu_ops.h"

namespace cria::memory {
namespace {

KvCacheParams small(uint32_t cells, uint32_t n_swa = 0) {
    KvCacheParams p;
    p.n_cells = cells;
    p.n_layer = 1;
    p.n_head_kv = 1;
    p.head_dim = 4;
    p.head_dim_v = 4;
    p.type_k = p.type_v = ElementType::F32;
    p.n_swa = n_swa;
    return p;
}

// Places tokens at positions [p0, p0 + n) of one sequence mask.
bool place(KvCache& c, int32_t p0, int n, uint64_t mask) {
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::vector<uint64_t> seqs(static_cast<size_t>(n), mask);
    for (int i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = p0 + i;
    return c.place({n, pos.data(), seqs.data()});
}

TEST(KvCache, PlacesContiguouslyAndTracksPositions) {
    KvCache c(small(16));
    ASSERT_TRUE(place(c, 0, 5, 1));
    EXPECT_EQ(c.n_used(), 5u);
    EXPECT_EQ(c.placed_cells(), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(c.seq_pos_min(0), 0);
    EXPECT_EQ(c.seq_pos_max(0), 4);
    EXPECT_EQ(c.seq_pos_max(1), -1);
}

TEST(KvCache, RemoveCopyKeep) {
    KvCache c(small(16));
    ASSERT_TRUE(place(c, 0, 8, 1));
    c.seq_cp(0, 2, 2, 6);
    EXPECT_EQ(c.seq_pos_min(2), 2);
    EXPECT_EQ(c.seq_pos_max(2), 5);
    c.seq_rm(0, 4, -1);
    EXPECT_EQ(c.seq_pos_max(0), 3);
    EXPECT_EQ(c.n_used(), 6u);  // cells 4, 5 still belong to sequence 2
    c.seq_keep(2);
    EXPECT_EQ(c.seq_pos_max(0), -1);
    EXPECT_EQ(c.n_used(), 4u);
    c.seq_rm(-1, -1, -1);
    EXPECT_EQ(c.n_used(), 0u);
    EXPECT_THROW(c.seq_rm(64, 0, 1), Error);
    EXPECT_THROW(c.seq_cp(0, -1, 0, 1), Error);
}

TEST(KvCache, ShiftMovesPositionsAndDropsNegatives) {
    KvCache c(small(16));
    ASSERT_TRUE(place(c, 0, 10, 1));
    c.seq_rm(0, 2, 5);
    c.seq_add(0, 5, -1, -3);  // 5..9 -> 2..6
    EXPECT_TRUE(c.has_shift());
    EXPECT_EQ(c.seq_pos_max(0), 6);
    EXPECT_EQ(c.n_used(), 7u);
    c.seq_add(0, 0, -1, -2);  // 0, 1 fall below zero and are removed
    EXPECT_EQ(c.seq_pos_min(0), 0);
    EXPECT_EQ(c.n_used(), 5u);
}

TEST(KvCache, FullCacheRefusesAndKeepsState) {
    KvCache c(small(8));
    ASSERT_TRUE(place(c, 0, 6, 1));
    EXPECT_FALSE(place(c, 6, 3, 1));
    EXPECT_EQ(c.n_used(), 6u);
    c.seq_rm(0, 0, 2);
    ASSERT_TRUE(place(c, 6, 3, 1));  // two freed cells at the front plus the two at the end
    EXPECT_EQ(c.n_used(), 7u);
}

TEST(KvCache, SlidingWindowFreesCellsOutsideTheWindow) {
    KvCache c(small(8, 4));
    for (int32_t p = 0; p < 20; ++p) ASSERT_TRUE(place(c, p, 1, 1)) << p;
    // Only the window (and the newest token) stays.
    EXPECT_LE(c.n_used(), 5u);
    EXPECT_EQ(c.seq_pos_max(0), 19);
    EXPECT_GE(c.seq_pos_min(0), 15);
}

TEST(KvCache, RejectsBlockTypesThatDoNotDivideTheHead) {
    KvCacheParams p = small(8);
    p.type_k = ElementType::Q8_0;  // 4 values per head, 32 per block
    EXPECT_THROW(KvCache{p}, Error);
    p.type_k = ElementType::Q4_K;
    EXPECT_THROW(KvCache{p}, Error);
}

// Two sequences whose cells interleave: each query must see exactly its own
// sequence's earlier cells.
TEST(KvCache, AttentionFollowsSequenceMembershipAndPositions) {
    KvCacheParams p = small(32);
    p.head_dim = p.head_dim_v = 8;
    p.n_head_kv = 2;
    KvCache c(p);
    cpu::ThreadPool pool(2);
    ops::CpuOps ops(pool);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    const int n = 12;
    const int64_t row = 16;  // 2 heads x 8
    // Tokens alternate between sequences 0 and 1; positions count per sequence.
    std::vector<int32_t> pos(n);
    std::vector<uint64_t> seqs(n);
    for (int i = 0; i < n; ++i) {
        pos[i] = i / 2;
        seqs[i] = uint64_t{1} << (i % 2);
    }
    ASSERT_TRUE(c.place({n, pos.data(), seqs.data()}));
    std::vector<float> k(n * row), v(n * row), q(n * 4 * 8), out(n * 4 * 8);
    for (auto* buf : {&k, &v, &q})
        for (auto& x : *buf) x = nd(rng);
    c.store(0, ops::TensorView::contiguous(ElementType::F32, k.data(), {8, 2, n}),
            ops::TensorView::contiguous(ElementType::F32, v.data(), {8, 2, n}));
    ops::AttentionParams ap;
    ap.scale = 0.35f;
    c.attend(ops, 0, ops::TensorView::contiguous(ElementType::F32, q.data(), {8, 4, n}), ap, 0,
             ops::TensorView::contiguous(ElementType::F32, out.data(), {8, 4, n}));
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < 4; ++h) {
            const int kvh = h / 2;
            std::vector<double> w;
            std::vector<int> keys;
            for (int j = 0; j < n; ++j) {
                if (seqs[j] != seqs[t] || pos[j] > pos[t]) continue;
                double s = 0;
                for (int d = 0; d < 8; ++d) s += double(q[(t * 4 + h) * 8 + d]) * k[j * row + kvh * 8 + d];
                w.push_back(s * 0.35);
                keys.push_back(j);
            }
            double mx = *std::max_element(w.begin(), w.end()), sum = 0;
            for (double& x : w) sum += (x = std::exp(x - mx));
            for (int d = 0; d < 8; ++d) {
                double y = 0;
                for (size_t i = 0; i < keys.size(); ++i) y += w[i] / sum * v[keys[i] * row + kvh * 8 + d];
                EXPECT_NEAR(out[(t * 4 + h) * 8 + d], y, 1e-5) << "token " << t << " head " << h;
            }
        }
}

}  // namespace
}  // namespace cria::memory

namespace cria::memory {
namespace {

// Places n tokens of `seq` from position p0 and stores distinct K/V values for them.
void place_and_store(KvCache& c, SeqId seq, int32_t p0, int n, float base) {
    ASSERT_TRUE(place(c, p0, n, uint64_t{1} << seq));
    std::vector<float> k(static_cast<size_t>(4 * n)), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
        k[i] = base + static_cast<float>(i);
        v[i] = -base - static_cast<float>(i);
    }
    c.store(0, ops::TensorView::contiguous(ElementType::F32, k.data(), {4, 1, int64_t{n}}),
            ops::TensorView::contiguous(ElementType::F32, v.data(), {4, 1, int64_t{n}}));
}

TEST(KvCache, SavesAndLoadsASequencesCells) {
    KvCache c(small(16));
    place_and_store(c, 1, 0, 3, 100.0f);  // another sequence first: seq 0's cells do not start at 0
    place_and_store(c, 0, 0, 5, 0.0f);
    const auto saved = c.seq_save(0);
    ASSERT_EQ(saved.positions, (std::vector<int32_t>{0, 1, 2, 3, 4}));
    ASSERT_EQ(saved.k.size(), 1u);
    ASSERT_EQ(saved.k[0].size(), 5 * c.k_cell_bytes());
    float k3[4];
    std::memcpy(k3, saved.k[0].data() + 3 * c.k_cell_bytes(), sizeof k3);
    EXPECT_EQ(k3[0], 12.0f);  // token 3's first key value as stored

    // Loaded into another sequence, which held something else: the same cells come back.
    place_and_store(c, 2, 0, 2, 50.0f);
    c.seq_load(2, saved);
    EXPECT_EQ(c.seq_pos_min(2), 0);
    EXPECT_EQ(c.seq_pos_max(2), 4);
    const auto again = c.seq_save(2);
    EXPECT_EQ(again.positions, saved.positions);
    EXPECT_EQ(again.k, saved.k);
    EXPECT_EQ(again.v, saved.v);
    EXPECT_EQ(c.n_used(), 3u + 5u + 5u);
}

TEST(KvCache, RefusedLoadsChangeNothing) {
    KvCache c(small(8));
    place_and_store(c, 0, 0, 6, 0.0f);
    const auto saved = c.seq_save(0);
    // Sequence 1 has 2 free cells, not 6.
    EXPECT_FALSE(c.seq_load_fits(1, saved.positions.size()));
    EXPECT_THROW(c.seq_load(1, saved), Error);
    EXPECT_EQ(c.seq_pos_max(1), -1);
    EXPECT_EQ(c.n_used(), 6u);
    // Sequence 0 may reuse its own cells.
    EXPECT_TRUE(c.seq_load_fits(0, saved.positions.size()));
    auto bad = saved;
    bad.positions[2] = bad.positions[1];  // not ascending
    EXPECT_THROW(c.seq_load(0, bad), Error);
    bad = saved;
    bad.k[0].pop_back();  // rows of the wrong size
    EXPECT_THROW(c.seq_load(0, bad), Error);
    EXPECT_EQ(c.seq_save(0).k, saved.k);
    // Keys waiting for a shift are not saved.
    c.seq_add(0, 0, -1, 2);
    EXPECT_THROW(c.seq_save(0), Error);
}

}  // namespace
}  // namespace cria::memory
