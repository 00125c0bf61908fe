// make_model_memory lays out a model's memories: recurrent layers in one
// RecurrentMemory (a state of the model's sizes per sequence), attention
// layers in the KV cache(s), each model layer at its own index.

#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/runtime/context.h"
#include "cria/runtime/model_memory.h"

namespace cria::runtime {
namespace {

model::HParams hybrid_hparams() {
    model::HParams hp;
    hp.arch_name = "test-hybrid";
    hp.n_layer = 5;
    hp.n_head = 4;
    hp.n_head_kv = 2;
    hp.head_dim = hp.head_dim_v = 8;
    hp.recurrent_layers = {true, false, true, true, false};
    hp.recurrent_conv_floats = 12;
    hp.recurrent_state_floats = 40;
    return hp;
}

ContextParams context_params() {
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_seq_max = 3;
    return cp;
}

TEST(ModelMemory, RecurrentLayersShareOneRecurrentMemoryOfTheModelsSizes) {
    const auto mem = make_model_memory(hybrid_hparams(), context_params());
    ASSERT_EQ(mem->n_layer(), 5u);
    EXPECT_EQ(mem->n_children(), 2u);
    uint32_t recurrent_index = 0, kv_index = 0;
    for (uint32_t l = 0; l < 5; ++l) {
        const auto& slot = mem->layer(l);
        if (hybrid_hparams().is_recurrent(l)) {
            ASSERT_NE(slot.recurrent, nullptr) << l;
            EXPECT_EQ(slot.kv, nullptr);
            EXPECT_EQ(slot.index, recurrent_index++);
            EXPECT_EQ(slot.recurrent->params().r_size, 12u);
            EXPECT_EQ(slot.recurrent->params().s_size, 40u);
            EXPECT_EQ(slot.recurrent->params().n_seq_max, 3u);
            EXPECT_EQ(slot.recurrent->params().n_layer, 3u);
        } else {
            ASSERT_NE(slot.kv, nullptr) << l;
            EXPECT_EQ(slot.recurrent, nullptr);
            EXPECT_EQ(slot.index, kv_index++);
        }
    }
    // The conv state and the SSM state of a layer and sequence are distinct, zeroed blocks.
    memory::RecurrentMemory& r = *mem->layer(2).recurrent;
    EXPECT_EQ(r.ssm_state(1, 2), r.conv_state(1, 2) + 12);
    for (int i = 0; i < 52; ++i) EXPECT_EQ(r.conv_state(1, 2)[i], 0.0f);
}

TEST(ModelMemory, AStateSpaceModelHasOnlyTheRecurrentMemory) {
    model::HParams hp = hybrid_hparams();
    hp.n_head = hp.n_head_kv = 0;
    hp.recurrent_layers.assign(hp.n_layer, true);
    const auto mem = make_model_memory(hp, context_params());
    ASSERT_EQ(mem->n_children(), 1u);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        EXPECT_NE(mem->layer(l).recurrent, nullptr);
        EXPECT_EQ(mem->layer(l).index, l);
    }
    // A recurrent state cannot forget part of its history.
    EXPECT_FALSE(mem->can_seq_rm(0, 0, 1) && mem->seq_pos_max(0) >= 0);
}

TEST(ModelMemory, ARecurrentLayerWithAttentionHasAKvCacheAndAState) {
    // falcon-h1: attention and a Mamba-2 mixer in parallel in every layer.
    model::HParams hp = hybrid_hparams();
    hp.recurrent_layers.assign(hp.n_layer, true);
    hp.recurrent_with_attention = true;
    const auto mem = make_model_memory(hp, context_params());
    ASSERT_EQ(mem->n_children(), 2u);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const auto& slot = mem->layer(l);
        ASSERT_NE(slot.kv, nullptr) << l;
        ASSERT_NE(slot.recurrent, nullptr) << l;
        EXPECT_EQ(slot.index, l);
        EXPECT_EQ(slot.recurrent_index, l);
        EXPECT_EQ(slot.recurrent->params().n_layer, hp.n_layer);
        EXPECT_EQ(slot.kv->params().n_layer, hp.n_layer);
    }
    // The states of two layers are distinct.
    EXPECT_NE(mem->layer(0).recurrent->ssm_state(mem->layer(0).recurrent_index, 0),
              mem->layer(1).recurrent->ssm_state(mem->layer(1).recurrent_index, 0));
    // Removing a suffix is refused by the state (no checkpoint), so neither changes.
    EXPECT_FALSE(mem->can_seq_rm(0, 1, -1) && mem->seq_pos_max(0) >= 0);
}

TEST(ModelMemory, WithoutRecurrentLayersOnlyKvCaches) {
    model::HParams hp = hybrid_hparams();
    hp.recurrent_layers.clear();
    const auto mem = make_model_memory(hp, context_params());
    ASSERT_EQ(mem->n_children(), 1u);
    for (uint32_t l = 0; l < hp.n_layer; ++l) EXPECT_NE(mem->layer(l).kv, nullptr);
}

TEST(ModelMemory, RecurrentLayersWithoutStateAreRefused) {
    model::HParams hp = hybrid_hparams();
    hp.recurrent_conv_floats = hp.recurrent_state_floats = 0;
    EXPECT_THROW(make_model_memory(hp, context_params()), Error);
}

}  // namespace
}  // namespace cria::runtime
