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
#include "cria/model/model.h"

namespace cria::runtime {

struct ContextParams;

// With a layer range (a pipeline stage, cria/runtime/pipeline.h) only those
// layers get cache rows or states; the others are held elsewhere, but every
// kind of memory the whole model needs is still there (perhaps with no
// layers), so that every stage cuts batches and answers sequence operations
// alike. Throws cria::Error when the model's recurrent layers keep no state.
std::unique_ptr<memory::HybridMemory> make_model_memory(const model::HParams& hp, const ContextParams& params,
                                                        model::LayerRange layers = {});

}  // namespace cria::runtime
