#include "cria/runtime/model_memory.h"

#include <algorithm>
#include <string>

#include "cria/core/error.h"
#include "cria/runtime/context.h"

namespace cria::runtime {

std::unique_ptr<memory::HybridMemory> make_model_memory(const model::HParams& hp, const ContextParams& params,
                                                        model::LayerRange held) {
    if (held.end == UINT32_MAX) held.end = hp.n_layer;
    const auto here = [&](uint32_t l) { return l >= held.begin && l < held.end; };
    enum class Kind { Full, Window, Recurrent };
    // A layer's first place: its KV cache when it attends, else its state;
    // a recurrent layer that also attends (falcon-h1) has its state as a
    // second place.
    const auto kind = [&](uint32_t l) {
        if (!hp.has_attention(l)) return Kind::Recurrent;
        return hp.is_swa(l) && hp.n_swa < params.n_ctx ? Kind::Window : Kind::Full;
    };
    const auto has_second_place = [&](uint32_t l) { return hp.is_recurrent(l) && hp.has_attention(l); };
    uint32_t count[3] = {0, 0, 0};  // layers held here, per kind (a second place counts too)
    bool needed[3] = {false, false, false};  // kinds the whole model has
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        needed[static_cast<int>(kind(l))] = true;
        if (has_second_place(l)) needed[static_cast<int>(Kind::Recurrent)] = true;
        if (!here(l)) continue;
        ++count[static_cast<int>(kind(l))];
        if (has_second_place(l)) ++count[static_cast<int>(Kind::Recurrent)];
    }

    memory::KvCacheParams kp;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    kp.type_k = params.type_k;
    kp.type_v = params.type_v;
    // Absorbed MLA caches one latent per token that is also its value, with
    // the roped key part after it.
    kp.value_in_key = hp.value_in_key;
    kp.rope_first = hp.n_lora_kv > 0 ? hp.head_dim - hp.n_rot : 0;  // MLA: rope on the last n_rot of each key head
    std::vector<std::unique_ptr<memory::Memory>> children;
    uint32_t child_of[3] = {0, 0, 0};
    if (needed[static_cast<int>(Kind::Full)]) {
        kp.n_cells = params.n_ctx;
        kp.n_layer = count[static_cast<int>(Kind::Full)];
        child_of[static_cast<int>(Kind::Full)] = static_cast<uint32_t>(children.size());
        children.push_back(std::make_unique<memory::KvCache>(kp));
    }
    if (needed[static_cast<int>(Kind::Window)]) {
        kp.n_layer = count[static_cast<int>(Kind::Window)];
        kp.n_swa = hp.n_swa;
        kp.n_cells = std::min(params.n_ctx, hp.n_swa * params.n_seq_max + params.n_ubatch);
        child_of[static_cast<int>(Kind::Window)] = static_cast<uint32_t>(children.size());
        children.push_back(std::make_unique<memory::KvCache>(kp));
    }
    if (needed[static_cast<int>(Kind::Recurrent)]) {
        if (hp.recurrent_conv_floats == 0 && hp.recurrent_state_floats == 0)
            throw Error("context: the recurrent layers of '" + hp.arch_name + "' keep no state");
        memory::RecurrentParams rp;
        rp.n_layer = count[static_cast<int>(Kind::Recurrent)];
        rp.r_size = hp.recurrent_conv_floats;
        rp.s_size = hp.recurrent_state_floats;
        rp.n_seq_max = params.n_seq_max;
        child_of[static_cast<int>(Kind::Recurrent)] = static_cast<uint32_t>(children.size());
        children.push_back(std::make_unique<memory::RecurrentMemory>(rp));
    }
    std::vector<memory::HybridMemory::LayerPlacement> layers;
    uint32_t next_index[3] = {0, 0, 0};
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const int k = static_cast<int>(kind(l));
        if (!here(l)) {
            layers.push_back({memory::HybridMemory::kHeldElsewhere, 0});
            continue;
        }
        memory::HybridMemory::LayerPlacement p{child_of[k], next_index[k]++};
        if (has_second_place(l)) {
            const int r = static_cast<int>(Kind::Recurrent);
            p.state_child = child_of[r];
            p.state_index = next_index[r]++;
        }
        layers.push_back(p);
    }
    return std::make_unique<memory::HybridMemory>(std::move(children), layers);
}

}  // namespace cria::runtime
