// HybridMemory: the layer -> memory map, every operation fanned out to the
// children, refusals that leave every child unchanged, placement undone when
// one child has no room, the strictest split, and checkpoints across a KV
// cache and a recurrent state.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/memory/hybrid_memory.h"
#include "memory/test_memories.h"

namespace cria::memory {
namespace {

using test::decode;
using test::kv_params;
using test::recurrent_params;
using test::state_of;
using Placement = HybridMemory::LayerPlacement;

// Layers 0, 2: full KV cache; layer 1: sliding window; layer 3: recurrent.
std::unique_ptr<HybridMemory> kv_swa_recurrent(uint32_t swa_cells = 32) {
    std::vector<std::unique_ptr<Memory>> children;
    children.push_back(std::make_unique<KvCache>(kv_params(32, 2)));
    children.push_back(std::make_unique<KvCache>(kv_params(swa_cells, 1, 8)));
    children.push_back(std::make_unique<RecurrentMemory>(recurrent_params(1)));
    return std::make_unique<HybridMemory>(std::move(children),
                                          std::vector<Placement>{{0, 0}, {1, 0}, {0, 1}, {2, 0}});
}

std::unique_ptr<HybridMemory> kv_only(uint32_t full_cells, uint32_t swa_cells = 0) {
    std::vector<std::unique_ptr<Memory>> children;
    std::vector<Placement> layers{{0, 0}};
    children.push_back(std::make_unique<KvCache>(kv_params(full_cells)));
    if (swa_cells > 0) {
        children.push_back(std::make_unique<KvCache>(kv_params(swa_cells, 1, 4)));
        layers.push_back({1, 0});
    }
    return std::make_unique<HybridMemory>(std::move(children), layers);
}

const RecurrentMemory& recurrent(const HybridMemory& h) { return dynamic_cast<const RecurrentMemory&>(h.child(2)); }

TEST(HybridMemory, OwnsTheLayerMap) {
    auto h = kv_swa_recurrent();
    ASSERT_EQ(h->n_layer(), 4u);
    EXPECT_EQ(h->layer(0).kv, &h->child(0));
    EXPECT_EQ(h->layer(2).kv, &h->child(0));
    EXPECT_EQ(h->layer(2).index, 1u);
    EXPECT_EQ(h->layer(1).kv, &h->child(1));
    EXPECT_EQ(h->layer(3).kv, nullptr);
    EXPECT_EQ(h->layer(3).recurrent, &h->child(2));
    EXPECT_EQ(h->n_sections(), 3u);

    auto make = [](std::vector<Placement> layers) {
        std::vector<std::unique_ptr<Memory>> children;
        children.push_back(std::make_unique<KvCache>(kv_params(8, 2)));
        return HybridMemory(std::move(children), layers);
    };
    EXPECT_THROW(make({{1, 0}}), Error);          // no such child
    EXPECT_THROW(make({{0, 2}}), Error);          // the cache has 2 layers
    EXPECT_THROW(make({{0, 1}, {0, 1}}), Error);  // two layers in one place
    EXPECT_THROW(HybridMemory({}, {}), Error);
}

TEST(HybridMemory, ALayerMayKeepAStateBesideItsKvCache) {
    const auto make = [](std::vector<Placement> layers) {
        std::vector<std::unique_ptr<Memory>> children;
        children.push_back(std::make_unique<KvCache>(kv_params(8, 2)));
        children.push_back(std::make_unique<RecurrentMemory>(recurrent_params(2)));
        return std::make_unique<HybridMemory>(std::move(children), layers);
    };
    const auto h = make({{0, 0, 1, 1}, {0, 1, 1, 0}});
    EXPECT_EQ(h->layer(0).kv, &h->child(0));
    EXPECT_EQ(h->layer(0).recurrent, &h->child(1));
    EXPECT_EQ(h->layer(0).recurrent_index, 1u);
    EXPECT_EQ(h->layer(1).recurrent_index, 0u);
    EXPECT_THROW(make({{0, 0, 0, 1}}), Error);               // the second place must be a recurrent memory
    EXPECT_THROW(make({{0, 0, 2, 0}}), Error);               // no such child
    EXPECT_THROW(make({{0, 0, 1, 2}}), Error);               // the state has 2 layers
    EXPECT_THROW(make({{0, 0, 1, 0}, {0, 1, 1, 0}}), Error);  // two states in one place
    EXPECT_THROW(make({{0, 0, 1, 0}, {1, 0}}), Error);        // a state and a recurrent layer in one place
}

TEST(HybridMemory, FansEveryOperationOut) {
    auto h = kv_swa_recurrent();
    ASSERT_TRUE(decode(*h, 0, 0, 6, 1.0f));
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(h->child(c).seq_pos_max(0), 5) << c;
    EXPECT_EQ(h->seq_pos_min(0), 0);
    EXPECT_EQ(h->seq_pos_max(0), 5);

    EXPECT_TRUE(h->seq_cp(0, 1, -1, -1));
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(h->child(c).seq_pos_max(1), 5) << c;
    EXPECT_EQ(state_of(recurrent(*h), 1), state_of(recurrent(*h), 0));
    EXPECT_TRUE(h->seq_add(1, -1, -1, 4));
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(h->child(c).seq_pos_min(1), 4) << c;
    EXPECT_TRUE(h->seq_keep(1));
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(h->child(c).seq_pos_max(0), -1) << c;
    EXPECT_TRUE(h->seq_rm(1, -1, -1));
    EXPECT_EQ(h->seq_pos_max(1), -1);
    ASSERT_TRUE(decode(*h, 2, 0, 2, 1.0f));
    h->clear();
    EXPECT_EQ(h->seq_pos_max(2), -1);
}

TEST(HybridMemory, RefusesAtomically) {
    auto h = kv_swa_recurrent();
    ASSERT_TRUE(decode(*h, 0, 0, 6, 1.0f));
    const auto state = state_of(recurrent(*h), 0);
    EXPECT_FALSE(h->can_seq_rm(0, 3, -1));
    EXPECT_FALSE(h->seq_rm(0, 3, -1));  // the recurrent state refuses: the KV caches keep their cells too
    EXPECT_FALSE(h->seq_cp(0, 1, 0, 3));
    EXPECT_FALSE(h->seq_add(0, 3, -1, 2));
    for (size_t c = 0; c < 3; ++c) {
        EXPECT_EQ(h->child(c).seq_pos_min(0), 0) << c;
        EXPECT_EQ(h->child(c).seq_pos_max(0), 5) << c;
        EXPECT_EQ(h->child(c).seq_pos_max(1), -1) << c;
    }
    EXPECT_EQ(state_of(recurrent(*h), 0), state);
    // Without a recurrent child the same truncation is fine.
    auto kv = kv_only(32, 16);
    ASSERT_TRUE(decode(*kv, 0, 0, 6, 1.0f));
    EXPECT_TRUE(kv->seq_rm(0, 3, -1));
    EXPECT_EQ(kv->child(0).seq_pos_max(0), 2);
    EXPECT_EQ(kv->child(1).seq_pos_max(0), 2);
}

TEST(HybridMemory, PlacementIsUndoneWhenAChildHasNoRoom) {
    auto h = kv_only(32, 4);
    const int32_t pos[6] = {0, 1, 2, 3, 4, 5};
    const uint64_t masks[6] = {1, 1, 1, 1, 1, 1};
    EXPECT_FALSE(h->place({6, pos, masks}));  // the window cache has 4 cells
    EXPECT_EQ(dynamic_cast<KvCache&>(h->child(0)).n_used(), 0u);
    EXPECT_EQ(h->seq_pos_max(0), -1);
    EXPECT_TRUE(h->place({4, pos, masks}));
    EXPECT_EQ(h->seq_pos_max(0), 3);
}

TEST(HybridMemory, TheStrictestChildSplits) {
    const int32_t pos[4] = {0, 0, 1, 1};
    const uint64_t masks[4] = {1, 2, 1, 2};
    const Split kv = kv_only(32)->split({4, pos, masks}, 3);
    EXPECT_TRUE(kv.in_order);
    EXPECT_EQ(kv.bounds, (std::vector<int64_t>{0, 3, 4}));
    const Split mixed = kv_swa_recurrent()->split({4, pos, masks}, 3);
    EXPECT_FALSE(mixed.in_order);
    EXPECT_EQ(mixed.order, (std::vector<int32_t>{0, 2, 1, 3}));
    EXPECT_EQ(mixed.bounds, (std::vector<int64_t>{0, 2, 4}));
}

TEST(HybridMemory, CheckpointRollsBackEveryChild) {
    auto h = kv_swa_recurrent();
    auto reference = kv_swa_recurrent();
    ASSERT_TRUE(decode(*reference, 0, 0, 6, 1.0f));
    ASSERT_TRUE(decode(*h, 0, 0, 4, 1.0f));
    ASSERT_TRUE(h->checkpoint_begin(0, 5));
    EXPECT_FALSE(h->checkpoint_begin(0, 5));
    ASSERT_TRUE(decode(*h, 0, 4, 5, 5.0f));
    EXPECT_FALSE(h->checkpoint_commit(0, 6));
    EXPECT_EQ(h->seq_pos_max(0), 8);
    EXPECT_TRUE(h->checkpoint_commit(0, 2));
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(h->child(c).seq_pos_max(0), 5) << c;
    EXPECT_EQ(state_of(recurrent(*h), 0), state_of(recurrent(*reference), 0));
    EXPECT_FALSE(h->checkpoint_commit(0, 0));
    // The checkpoint closed everywhere: a new one opens.
    EXPECT_TRUE(h->checkpoint_begin(0, 1));
    EXPECT_TRUE(h->checkpoint_commit(0, 0));
}

}  // namespace
}  // namespace cria::memory
