#pragma once
// The state-space mixers in float64 (llama.cpp's build_mamba_layer and
// build_mamba2_layer) over a whole sequence from an empty state: the causal
// convolution with zero history, the selective scan token by token. Shared
// by mamba, mamba2 and the hybrids' SSM layers.

#include "model/reference/helpers.h"

namespace cria::model::reference {

// Mamba-1 on the normed inputs h of every position; returns ssm_out's output.
Rows mamba_mixer(const Input& in, uint32_t layer, const Rows& h);
// Mamba-2 on the normed inputs h of every position; returns ssm_out's output.
Rows mamba2_mixer(const Input& in, uint32_t layer, const Rows& h);

}  // namespace cria::model::reference
