#pragma once
// The memories a model needs, laid out for a context (llama.cpp's
// create_memory): recurrent layers (HParams::is_recurrent) go into one
// memory::RecurrentMemory with a state per sequence (n_seq_max of them);
// sliding-window layers get their own small cache when the window is shorter
// than the context (llama.cpp's iSWA cache); the other layers share the full
// KV cache. A recurrent layer that also attends (HParams::recurrent_with_attention,
// falcon-h1) has a place in both: its KV cache and its state. The router
// (memory::HybridMemory) holds them and the layer map.

#include <memory>

#include "cria/memory/hybrid_memory.h"
#include "cria/model/hparams.h"

namespace cria::runtime {

struct ContextParams;

// Throws cria::Error when the model's recurrent layers keep no state.
std::unique_ptr<memory::HybridMemory> make_model_memory(const model::HParams& hp, const ContextParams& params);

}  // namespace cria::runtime
