// RecurrentMemory: a whole-history state per sequence. Partial removal is
// refused without any change; copies copy the state; batches are split per
// sequence; a checkpoint restores the state after the accepted position,
// driven by a fake state update (test_memories.h).

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "cria/core/error.h"
#include "cria/memory/recurrent_memory.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

using test::decode;
using test::recurrent_params;
using test::state_of;

TEST(RecurrentMemory, RefusesPartialRemovalAndChangesNothing) {
    RecurrentMemory m(recurrent_params());
    ASSERT_TRUE(decode(m, 0, 0, 5, 1.0f));
    const auto before = state_of(m, 0);
    EXPECT_EQ(m.seq_pos_min(0), 0);
    EXPECT_EQ(m.seq_pos_max(0), 4);

    EXPECT_FALSE(m.can_seq_rm(0, 3, -1));
    EXPECT_FALSE(m.seq_rm(0, 3, -1));  // the tail of the history
    EXPECT_FALSE(m.seq_rm(0, 0, 2));   // its head
    EXPECT_FALSE(m.seq_rm(-1, 1, 3));  // every sequence: seq 0 overlaps partly
    EXPECT_EQ(m.seq_pos_max(0), 4);
    EXPECT_EQ(state_of(m, 0), before);

    EXPECT_TRUE(m.seq_rm(0, 5, -1));  // nothing of it
    EXPECT_EQ(state_of(m, 0), before);
    EXPECT_TRUE(m.seq_rm(0, -1, -1));  // all of it
    EXPECT_EQ(m.seq_pos_max(0), -1);
    EXPECT_EQ(state_of(m, 0), std::vector<float>(before.size(), 0.0f));
}

TEST(RecurrentMemory, CopyKeepAndShiftWorkOnWholeStates) {
    RecurrentMemory m(recurrent_params());
    ASSERT_TRUE(decode(m, 0, 0, 4, 1.0f));
    ASSERT_TRUE(decode(m, 2, 0, 2, 7.0f));
    EXPECT_FALSE(m.seq_cp(0, 1, 0, 2));  // part of a state cannot be copied
    EXPECT_EQ(m.seq_pos_max(1), -1);
    EXPECT_TRUE(m.seq_cp(0, 1, -1, -1));
    EXPECT_EQ(state_of(m, 1), state_of(m, 0));
    EXPECT_EQ(m.seq_pos_max(1), 3);
    // The copy continues on its own.
    ASSERT_TRUE(decode(m, 1, 4, 1, 9.0f));
    EXPECT_NE(state_of(m, 1), state_of(m, 0));

    EXPECT_FALSE(m.seq_add(0, 2, -1, 3));  // part of the span
    EXPECT_FALSE(m.seq_add(0, -1, -1, -1));  // the state would start before 0
    EXPECT_TRUE(m.seq_add(0, -1, -1, 10));
    EXPECT_EQ(m.seq_pos_min(0), 10);
    EXPECT_EQ(m.seq_pos_max(0), 13);

    EXPECT_TRUE(m.seq_keep(1));
    EXPECT_EQ(m.seq_pos_max(0), -1);
    EXPECT_EQ(m.seq_pos_max(2), -1);
    EXPECT_EQ(m.seq_pos_max(1), 4);
    m.clear();
    EXPECT_EQ(m.seq_pos_max(1), -1);
}

TEST(RecurrentMemory, SplitsPerSequenceAndRefusesBatchesItCannotTake) {
    RecurrentMemory m(recurrent_params());
    ASSERT_TRUE(decode(m, 1, 0, 2, 0.0f));
    const int32_t pos[4] = {0, 2, 1, 3};
    const uint64_t masks[4] = {1, 2, 1, 2};
    const Split s = m.split({4, pos, masks}, 8);
    EXPECT_EQ(s.order, (std::vector<int32_t>{0, 2, 1, 3}));
    EXPECT_EQ(s.bounds, (std::vector<int64_t>{0, 2, 4}));

    const uint64_t shared[1] = {3};
    EXPECT_THROW(m.split({1, pos, shared}, 8), Error);  // a token in two sequences
    const int32_t gap[1] = {3};
    const uint64_t seq1[1] = {2};
    EXPECT_THROW(m.split({1, gap, seq1}, 8), Error);  // sequence 1 continues at 2
    const uint64_t beyond[1] = {uint64_t{1} << 9};
    EXPECT_THROW(m.split({1, pos, beyond}, 8), Error);  // n_seq_max = 4
}

TEST(RecurrentMemory, CheckpointCommitRestoresTheAcceptedState) {
    RecurrentMemory reference(recurrent_params()), m(recurrent_params());
    ASSERT_TRUE(decode(reference, 0, 0, 5, 1.0f));  // tokens 1..5
    ASSERT_TRUE(decode(m, 0, 0, 3, 1.0f));          // tokens 1..3
    const auto after_three = state_of(m, 0);

    ASSERT_TRUE(m.checkpoint_begin(0, 4));
    EXPECT_FALSE(m.checkpoint_begin(0, 4));
    ASSERT_TRUE(decode(m, 0, 3, 4, 4.0f));  // tokens 4..7: 4 and 5 are accepted
    EXPECT_EQ(m.seq_pos_max(0), 6);
    EXPECT_FALSE(m.seq_rm(0, 5, -1));       // the plain way is refused...
    EXPECT_FALSE(m.checkpoint_commit(0, 5));  // ...and so is accepting more than was decoded
    EXPECT_TRUE(m.checkpoint_commit(0, 2));   // ...the checkpoint rolls back
    EXPECT_EQ(m.seq_pos_max(0), 4);
    EXPECT_EQ(state_of(m, 0), state_of(reference, 0));
    EXPECT_FALSE(m.checkpoint_commit(0, 0));  // closed

    // Nothing accepted: the state before the batch.
    RecurrentMemory n(recurrent_params());
    ASSERT_TRUE(decode(n, 0, 0, 3, 1.0f));
    ASSERT_TRUE(n.checkpoint_begin(0, 2));
    ASSERT_TRUE(decode(n, 0, 3, 2, 4.0f));
    EXPECT_TRUE(n.checkpoint_commit(0, 0));
    EXPECT_EQ(n.seq_pos_max(0), 2);
    EXPECT_EQ(state_of(n, 0), after_three);
    // Everything accepted: the state as decoded.
    ASSERT_TRUE(n.checkpoint_begin(0, 2));
    ASSERT_TRUE(decode(n, 0, 3, 2, 4.0f));
    EXPECT_TRUE(n.checkpoint_commit(0, 2));
    EXPECT_EQ(state_of(n, 0), state_of(reference, 0));
}

TEST(RecurrentMemory, SavedSectionRoundTripsAndBadOnesAreRefused) {
    RecurrentMemory m(recurrent_params()), other(recurrent_params());
    ASSERT_TRUE(decode(m, 0, 0, 6, 2.0f));
    std::vector<Section> saved;
    m.save_seq(0, saved);
    ASSERT_EQ(saved.size(), 1u);
    EXPECT_EQ(saved[0].tag, RecurrentMemory::kTag);
    EXPECT_EQ(saved[0].n_positions, 6u);

    ASSERT_TRUE(decode(other, 3, 0, 2, 9.0f));
    const auto untouched = state_of(other, 3);
    auto refused = [&](std::vector<Section> s, const LoadLimits& limits = {}) {
        EXPECT_THROW(other.read_seq(3, s, limits), Error);
        EXPECT_EQ(state_of(other, 3), untouched);
        EXPECT_EQ(other.seq_pos_max(3), 1);
    };
    auto bad = saved;
    bad[0].tag = fourcc('K', 'V', 'A', 'T');
    refused(bad);
    bad = saved;
    bad[0].version = 2;
    refused(bad);
    bad = saved;
    bad[0].payload.pop_back();
    refused(bad);
    bad = saved;
    bad[0].payload.push_back(0);
    refused(bad);
    bad = saved;
    bad[0].payload[4] = 9;  // r_size
    refused(bad);
    bad = saved;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bad[0].payload.data() + 20, &nan, sizeof nan);
    refused(bad);
    refused(saved, LoadLimits{5});  // position 5 is beyond 5 allowed positions
    refused({});

    auto loaded = other.read_seq(3, saved, {});
    other.load_seq(3, *loaded);
    EXPECT_EQ(state_of(other, 3), state_of(m, 0));
    EXPECT_EQ(other.seq_pos_min(3), 0);
    EXPECT_EQ(other.seq_pos_max(3), 5);
    // It continues like the original.
    ASSERT_TRUE(decode(m, 0, 6, 1, 3.0f));
    ASSERT_TRUE(decode(other, 3, 6, 1, 3.0f));
    EXPECT_EQ(state_of(other, 3), state_of(m, 0));
}

}  // namespace
}  // namespace cria::memory
