// A HybridMemory reports every mutating sequence operation to its observer
// (a pipeline rank's copy replays them, runtime/pipeline.h), and a copy that
// holds none of a kind's layers (a pipeline stage) still answers as the
// whole memory does.

#include <gtest/gtest.h>

#include "cria/memory/hybrid_memory.h"
#include "cria/memory/sequence_op.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

using test::decode;
using test::kv_params;
using test::recurrent_params;
using Placement = HybridMemory::LayerPlacement;

struct Recorder final : SequenceObserver {
    std::vector<SequenceOp> ops;
    void applied(const SequenceOp& op) override { ops.push_back(op); }
};

// Layer 0 attention, layer 1 recurrent; `held` says which this copy holds.
std::unique_ptr<HybridMemory> two_layers(bool hold_attention, bool hold_recurrent) {
    std::vector<std::unique_ptr<Memory>> children;
    children.push_back(std::make_unique<KvCache>(kv_params(32, hold_attention ? 1 : 0)));
    children.push_back(std::make_unique<RecurrentMemory>(recurrent_params(hold_recurrent ? 1 : 0)));
    const Placement elsewhere{HybridMemory::kHeldElsewhere, 0};
    return std::make_unique<HybridMemory>(
        std::move(children), std::vector<Placement>{hold_attention ? Placement{0, 0} : elsewhere,
                                                    hold_recurrent ? Placement{1, 0} : elsewhere});
}

TEST(SequenceObserver, EveryMutatingOperationIsReportedAndReplays) {
    auto whole = two_layers(true, true);
    auto stage = two_layers(false, true);
    Recorder rec;
    whole->set_observer(&rec);
    decode(*whole, 0, 0, 4, 1.0f);
    decode(*stage, 0, 0, 4, 1.0f);
    EXPECT_TRUE(rec.ops.empty()) << "placing a micro-batch is not a sequence operation";
    EXPECT_FALSE(whole->seq_rm(0, 2, -1));  // the recurrent state refuses part of its history
    EXPECT_TRUE(whole->seq_cp(0, 1, -1, -1));
    EXPECT_TRUE(whole->checkpoint_begin(1, 2));
    EXPECT_TRUE(whole->checkpoint_commit(1, 0));
    EXPECT_TRUE(whole->seq_keep(1));
    whole->clear();
    ASSERT_EQ(rec.ops.size(), 6u);
    EXPECT_EQ(rec.ops[0].kind, SequenceOp::Kind::Remove);
    EXPECT_EQ(rec.ops[1].kind, SequenceOp::Kind::Copy);
    EXPECT_EQ(rec.ops[1].dst, 1);
    EXPECT_EQ(rec.ops[2].value, 2);
    EXPECT_EQ(rec.ops[5].kind, SequenceOp::Kind::Clear);
    // The stage (no attention layer held) gives the same answers in turn.
    const std::vector<bool> answers{false, true, true, true, true, true};
    for (size_t i = 0; i < rec.ops.size(); ++i) EXPECT_EQ(apply_sequence_op(*stage, rec.ops[i]), answers[i]) << i;
    EXPECT_EQ(stage->seq_pos_max(0), -1);
}

TEST(SequenceObserver, AStageHoldsOnlyItsLayers) {
    auto whole = two_layers(true, true);
    auto stage = two_layers(false, true);
    EXPECT_EQ(stage->layer(0).memory, nullptr);
    EXPECT_EQ(stage->layer(0).kv, nullptr);
    EXPECT_NE(stage->layer(1).recurrent, nullptr);
    EXPECT_LT(stage->memory_bytes(), whole->memory_bytes());
    // The split follows the whole model's strictest memory on every stage.
    const std::vector<int32_t> pos{0, 1, 0, 1};
    const std::vector<uint64_t> seqs{1, 1, 2, 2};
    const UbatchView batch{4, pos.data(), seqs.data()};
    EXPECT_EQ(stage->split(batch, 8).bounds, whole->split(batch, 8).bounds);
}

}  // namespace
}  // namespace cria::memory
