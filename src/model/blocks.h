#pragma once
// The building blocks every architecture is assembled from (one micro-batch
// at a time): embedding lookup, the attention block, the feed-forward block
// and the output head. Each architecture file in archs/ composes them with the
// variants it needs; the blocks themselves only read the activations in the
// workspace and the weights of the layer.

#include <cstdint>

#include "cria/model/model.h"

namespace cria::model::blocks {

// Everything a block needs about the micro-batch being computed.
struct Step {
    ops::Ops& ops;
    const HParams& hp;
    const Weights& w;
    Workspace& ws;
    const ForwardInput& in;
    AttentionMemory& memory;
    const Model& model;
    int64_t n = 0;  // tokens in the micro-batch
};

// A [rows, n] F32 view of a workspace buffer.
ops::TensorView view(std::vector<float>& buf, int64_t rows, int64_t n);

// ws.x = embeddings of the tokens (or a copy of in.embd), scaled by
// sqrt(n_embd) when `scale`.
void embed(Step& s, bool scale);

// How the attention block computes Q, K and V.
enum class QkvLayout { Separate, Fused };

struct AttentionOptions {
    QkvLayout layout = QkvLayout::Separate;
    bool bias = false;       // qwen2: biases on q, k, v
    bool qk_norm = false;    // qwen3, gemma3: RMSNorm over each q and k head
    bool post_norm = false;  // gemma2/3: RMSNorm of the block's output before the residual add
};

// x += [post_norm](Wo · attention(rope(Wq h), rope(Wk h), Wv h)), h = rms_norm(x).
void attention_block(Step& s, uint32_t layer, const AttentionOptions& options);

enum class GateUpLayout { Separate, Fused };

struct FfnOptions {
    GateUpLayout layout = GateUpLayout::Separate;
    FfnActivation activation = FfnActivation::Silu;
    bool post_norm = false;
};

// x += [post_norm](down · (act(gate h) * up h)), h = rms_norm(x).
void ffn_block(Step& s, uint32_t layer, const FfnOptions& options);

// Final norm of the output rows, then logits (with the final softcap) and/or
// the hidden states.
void output_head(Step& s, float* logits, float* hidden);

}  // namespace cria::model::blocks

namespace cria::model::archs {

// One function per architecture family: the whole forward of a micro-batch.
void forward_llama(blocks::Step& s, float* logits, float* hidden);  // llama, qwen2, qwen3
void forward_gemma(blocks::Step& s, float* logits, float* hidden);  // gemma2, gemma3
void forward_phi3(blocks::Step& s, float* logits, float* hidden);   // phi3

}  // namespace cria::model::archs
