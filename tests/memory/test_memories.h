#pragma once
// Helpers for the memory tests: small memories, and a fake "forward pass"
// that drives them as a model would -- K/V rows stored per layer for a KV
// cache, a trivial state update recorded per position for a recurrent state.

#include <cstdint>
#include <vector>

#include "cria/memory/hybrid_memory.h"
#include "cria/memory/kv_cache.h"
#include "cria/memory/recurrent_memory.h"

namespace cria::memory::test {

inline KvCacheParams kv_params(uint32_t cells, uint32_t n_layer = 1, uint32_t n_swa = 0) {
    KvCacheParams p;
    p.n_cells = cells;
    p.n_layer = n_layer;
    p.n_head_kv = 1;
    p.head_dim = 4;
    p.head_dim_v = 4;
    p.type_k = p.type_v = ElementType::F32;
    p.n_swa = n_swa;
    return p;
}

inline RecurrentParams recurrent_params(uint32_t n_layer = 2, uint32_t n_seq_max = 4) {
    RecurrentParams p;
    p.n_layer = n_layer;
    p.r_size = 3;
    p.s_size = 5;
    p.n_seq_max = n_seq_max;
    return p;
}

// The fake recurrent layer: the convolution state shifts the input in, the
// SSM state decays and adds it (different per layer and element).
inline void fake_update(RecurrentMemory& m, uint32_t layer, SeqId seq, float x) {
    float* conv = m.conv_state(layer, seq);
    const uint32_t r = m.params().r_size;
    for (uint32_t i = 0; i + 1 < r; ++i) conv[i] = conv[i + 1];
    conv[r - 1] = x;
    float* ssm = m.ssm_state(layer, seq);
    for (uint32_t j = 0; j < m.params().s_size; ++j) ssm[j] = 0.5f * ssm[j] + x * static_cast<float>(j + 1) + static_cast<float>(layer);
}

// Tokens x0, x0 + 1, ... of one sequence from position p0, through split,
// place and a per-layer update of every memory (KV rows hold the token value).
// Returns false when the memory had no room.
inline bool decode(Memory& m, SeqId seq, int32_t p0, int n, float x0, uint32_t n_ubatch = 512) {
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::vector<uint64_t> masks(static_cast<size_t>(n), uint64_t{1} << seq);
    for (int i = 0; i < n; ++i) pos[static_cast<size_t>(i)] = p0 + i;
    const Split split = m.split({n, pos.data(), masks.data()}, n_ubatch);
    for (size_t u = 0; u < split.n_ubatches(); ++u) {
        const int64_t first = split.bounds[u], count = split.bounds[u + 1] - first;
        std::vector<int32_t> up;
        std::vector<uint64_t> um;
        std::vector<float> xs;
        for (int64_t k = 0; k < count; ++k) {
            const int32_t e = split.entry(first + k);
            up.push_back(pos[static_cast<size_t>(e)]);
            um.push_back(masks[static_cast<size_t>(e)]);
            xs.push_back(x0 + static_cast<float>(e));
        }
        if (!m.place({count, up.data(), um.data()})) return false;
        std::vector<std::pair<KvCache*, uint32_t>> kv_layers;
        std::vector<std::pair<RecurrentMemory*, uint32_t>> rec_layers;
        if (auto* h = dynamic_cast<HybridMemory*>(&m)) {
            for (uint32_t l = 0; l < h->n_layer(); ++l) {
                if (h->layer(l).kv) kv_layers.emplace_back(h->layer(l).kv, h->layer(l).index);
                if (h->layer(l).recurrent) rec_layers.emplace_back(h->layer(l).recurrent, h->layer(l).index);
            }
        } else if (auto* kv = dynamic_cast<KvCache*>(&m)) {
            for (uint32_t l = 0; l < kv->params().n_layer; ++l) kv_layers.emplace_back(kv, l);
        } else if (auto* rec = dynamic_cast<RecurrentMemory*>(&m)) {
            for (uint32_t l = 0; l < rec->params().n_layer; ++l) rec_layers.emplace_back(rec, l);
        }
        for (auto [kv, l] : kv_layers) {
            std::vector<float> k(static_cast<size_t>(4 * count)), v(k.size());
            for (size_t i = 0; i < k.size(); ++i) {
                k[i] = xs[i / 4] + static_cast<float>(l);
                v[i] = -xs[i / 4];
            }
            kv->store(l, ops::TensorView::contiguous(ElementType::F32, k.data(), {4, 1, count}),
                      ops::TensorView::contiguous(ElementType::F32, v.data(), {4, 1, count}));
        }
        for (auto [rec, l] : rec_layers)
            for (int64_t k = 0; k < count; ++k) {
                fake_update(*rec, l, seq, xs[static_cast<size_t>(k)]);
                rec->record_position(l, seq, up[static_cast<size_t>(k)]);
            }
    }
    return true;
}

// Every layer's state of a sequence, for comparisons.
inline std::vector<float> state_of(const RecurrentMemory& m, SeqId seq) {
    std::vector<float> out;
    for (uint32_t l = 0; l < m.params().n_layer; ++l) {
        out.insert(out.end(), m.conv_state(l, seq), m.conv_state(l, seq) + m.params().r_size);
        out.insert(out.end(), m.ssm_state(l, seq), m.ssm_state(l, seq) + m.params().s_size);
    }
    return out;
}

}  // namespace cria::memory::test
