// The KV cache (full attention and sliding window) through the memory::Memory
// interface: every sequence operation reports success, micro-batch placement
// and its undo, the consecutive split, and checkpoint/commit.

#include <gtest/gtest.h>

#include "cria/memory/kv_cache.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

using test::decode;
using test::kv_params;

class KvMemoryOps : public ::testing::TestWithParam<uint32_t> {};  // the window (0: full attention)

TEST_P(KvMemoryOps, EverySequenceOperationSucceeds) {
    KvCache cache(kv_params(32, 1, GetParam()));
    Memory& m = cache;
    ASSERT_TRUE(decode(m, 0, 0, 8, 0.0f));
    EXPECT_EQ(m.seq_pos_min(0), 0);
    EXPECT_EQ(m.seq_pos_max(0), 7);

    EXPECT_TRUE(m.can_seq_cp(0, 1, 2, 6));
    EXPECT_TRUE(m.seq_cp(0, 1, 2, 6));
    EXPECT_EQ(m.seq_pos_min(1), 2);
    EXPECT_EQ(m.seq_pos_max(1), 5);

    EXPECT_TRUE(m.can_seq_rm(0, 4, -1));
    EXPECT_TRUE(m.seq_rm(0, 4, -1));
    EXPECT_EQ(m.seq_pos_max(0), 3);
    EXPECT_EQ(m.seq_pos_max(1), 5);  // the copy keeps its cells

    EXPECT_TRUE(m.can_seq_add(1, 0, -1, -2));
    EXPECT_TRUE(m.seq_add(1, 0, -1, -2));
    EXPECT_TRUE(m.has_shift());
    EXPECT_EQ(m.seq_pos_min(1), 0);
    EXPECT_EQ(m.seq_pos_max(1), 3);
    EXPECT_TRUE(m.seq_add(1, 0, 2, -5));  // cells shifted below 0 are dropped
    EXPECT_EQ(m.seq_pos_min(1), 2);

    EXPECT_TRUE(m.seq_keep(1));
    EXPECT_EQ(m.seq_pos_max(0), -1);
    EXPECT_EQ(m.seq_pos_max(1), 3);

    EXPECT_TRUE(m.seq_rm(-1, -1, -1));
    EXPECT_EQ(m.seq_pos_max(1), -1);
    ASSERT_TRUE(decode(m, 2, 0, 3, 0.0f));
    m.clear();
    EXPECT_EQ(m.seq_pos_max(2), -1);
    EXPECT_FALSE(m.has_shift());
}

TEST_P(KvMemoryOps, UnplaceGivesTheCellsBack) {
    KvCache cache(kv_params(16, 1, GetParam()));
    ASSERT_TRUE(decode(cache, 0, 0, 4, 0.0f));
    const int32_t p[2] = {4, 5};
    const uint64_t s[2] = {1, 1};
    ASSERT_TRUE(cache.place({2, p, s}));
    EXPECT_EQ(cache.seq_pos_max(0), 5);
    cache.unplace();
    EXPECT_EQ(cache.seq_pos_max(0), 3);
    EXPECT_EQ(cache.n_used(), 4u);
}

TEST_P(KvMemoryOps, CheckpointCommitRemovesTheRejectedPositions) {
    KvCache cache(kv_params(32, 1, GetParam()));
    Memory& m = cache;
    ASSERT_TRUE(decode(m, 0, 0, 5, 0.0f));
    EXPECT_FALSE(m.checkpoint_commit(0, 0));  // none open
    ASSERT_TRUE(m.checkpoint_begin(0, 4));
    EXPECT_FALSE(m.checkpoint_begin(0, 4));  // one at a time
    ASSERT_TRUE(decode(m, 0, 5, 4, 5.0f));
    EXPECT_FALSE(m.checkpoint_commit(0, 5));  // more than the verify batch: refused, nothing changed
    EXPECT_EQ(m.seq_pos_max(0), 8);
    EXPECT_TRUE(m.checkpoint_commit(0, 2));
    EXPECT_EQ(m.seq_pos_max(0), 6);
    EXPECT_FALSE(m.checkpoint_commit(0, 0));  // closed

    ASSERT_TRUE(m.checkpoint_begin(0, 3));
    ASSERT_TRUE(decode(m, 0, 7, 3, 7.0f));
    EXPECT_TRUE(m.checkpoint_commit(0, 0));
    EXPECT_EQ(m.seq_pos_max(0), 6);
    ASSERT_TRUE(m.checkpoint_begin(0, 2));
    ASSERT_TRUE(decode(m, 0, 7, 2, 7.0f));
    EXPECT_TRUE(m.checkpoint_commit(0, 2));  // all accepted
    EXPECT_EQ(m.seq_pos_max(0), 8);
}

INSTANTIATE_TEST_SUITE_P(FullAndWindow, KvMemoryOps, ::testing::Values(0u, 64u));

TEST(KvMemory, SlidingWindowOperationsSeeOnlyTheWindow) {
    KvCache cache(kv_params(16, 1, 4));
    Memory& m = cache;
    ASSERT_TRUE(decode(m, 0, 0, 8, 0.0f));  // one micro-batch: nothing is older than its window yet
    EXPECT_EQ(m.seq_pos_min(0), 0);
    ASSERT_TRUE(decode(m, 0, 8, 1, 8.0f));  // positions < 8 - 4 + 1 leave the window
    EXPECT_EQ(m.seq_pos_min(0), 5);
    EXPECT_EQ(m.seq_pos_max(0), 8);
    EXPECT_TRUE(m.seq_cp(0, 1, -1, -1));
    EXPECT_TRUE(m.seq_rm(0, 7, -1));
    EXPECT_EQ(m.seq_pos_max(0), 6);
    EXPECT_EQ(m.seq_pos_max(1), 8);
    EXPECT_TRUE(m.seq_add(1, -1, -1, 10));
    EXPECT_EQ(m.seq_pos_min(1), 15);
    EXPECT_TRUE(m.seq_keep(0));
    EXPECT_EQ(m.seq_pos_max(1), -1);
    EXPECT_EQ(cache.n_used(), 2u);
}

TEST(KvMemory, SplitsABatchIntoConsecutiveSlices) {
    KvCache cache(kv_params(16));
    std::vector<int32_t> pos(10);
    std::vector<uint64_t> masks(10, 1);
    for (int i = 0; i < 10; ++i) pos[static_cast<size_t>(i)] = i;
    const Split s = cache.split({10, pos.data(), masks.data()}, 4);
    EXPECT_TRUE(s.in_order);
    EXPECT_EQ(s.bounds, (std::vector<int64_t>{0, 4, 8, 10}));
    EXPECT_EQ(s.entry(9), 9);
}

TEST(Split, BySequenceGroupsEachSequencesTokensInOrder) {
    const int32_t pos[5] = {0, 0, 1, 1, 2};
    const uint64_t masks[5] = {1, 2, 1, 2, 1};
    const Split s = split_by_sequence({5, pos, masks}, 2);
    EXPECT_FALSE(s.in_order);
    EXPECT_EQ(s.order, (std::vector<int32_t>{0, 2, 4, 1, 3}));
    EXPECT_EQ(s.bounds, (std::vector<int64_t>{0, 2, 3, 5}));
    // One sequence: the plain slicing.
    const uint64_t one[3] = {1, 1, 1};
    const Split t = split_by_sequence({3, pos, one}, 2);
    EXPECT_TRUE(t.in_order);
    EXPECT_EQ(t.bounds, (std::vector<int64_t>{0, 2, 3}));
}

}  // namespace
}  // namespace cria::memory
