// sequence_runs cuts a micro-batch into runs of one sequence each, the walk
// of a recurrent layer, and refuses tokens in no sequence or in several.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "model/sequence_runs.h"

namespace cria::model {
namespace {

TEST(SequenceRuns, ConsecutiveTokensOfOneSequenceFormOneRun) {
    const uint64_t masks[] = {1, 1, 4, 4, 4, 1, 2};
    ForwardInput in;
    in.n_tokens = 7;
    in.seq_masks = masks;
    const std::vector<SequenceRun> runs = sequence_runs(in);
    ASSERT_EQ(runs.size(), 4u);
    EXPECT_EQ(runs[0].seq, 0);
    EXPECT_EQ(runs[0].first, 0);
    EXPECT_EQ(runs[0].n, 2);
    EXPECT_EQ(runs[1].seq, 2);
    EXPECT_EQ(runs[1].first, 2);
    EXPECT_EQ(runs[1].n, 3);
    EXPECT_EQ(runs[2].seq, 0);
    EXPECT_EQ(runs[2].first, 5);
    EXPECT_EQ(runs[2].n, 1);
    EXPECT_EQ(runs[3].seq, 1);
    EXPECT_EQ(runs[3].n, 1);
}

TEST(SequenceRuns, TokensInNoOrSeveralSequencesAreRefused) {
    ForwardInput in;
    in.n_tokens = 2;
    EXPECT_THROW(sequence_runs(in), Error);  // no seq_masks
    const uint64_t shared[] = {1, 3};
    in.seq_masks = shared;
    EXPECT_THROW(sequence_runs(in), Error);
    const uint64_t none[] = {1, 0};
    in.seq_masks = none;
    EXPECT_THROW(sequence_runs(in), Error);
}

}  // namespace
}  // namespace cria::model
