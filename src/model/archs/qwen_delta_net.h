#pragma once
// What qwen3next, qwen35 and qwen35moe share (llama.cpp's
// llm_build_delta_net_base families): gated delta-net layers interleaved
// with gated attention layers, each followed by a feed-forward block
// (dense SwiGLU or a mixture of experts with a gated shared expert). The
// three architecture files differ only in the options below.

#include "model/arch.h"
#include "model/hparams_keys.h"
#include "model/tensor_table.h"

namespace cria::model::archs {

struct QwenDeltaNetOptions {
    // qwen3next: value head h reads key head h / (n_v / n_k), beta and
    // alpha come from one ssm_ba matrix grouped by key head, rope is NeoX.
    // qwen35*: h % n_k (the converter tiles the heads), ssm_beta and
    // ssm_alpha, rope is IMROPE with rope.dimension_sections (equal to NeoX
    // for text positions, checked).
    bool qwen3next = false;
};

void read_qwen_delta_net_hparams(const HParamsKeys& keys, HParams& hp, const QwenDeltaNetOptions& o);
void declare_qwen_delta_net_tensors(const HParams& hp, TensorTable& t, Weights& w, const QwenDeltaNetOptions& o);
void qwen_delta_net_forward(blocks::Step& s, float* logits, float* hidden);

}  // namespace cria::model::archs
