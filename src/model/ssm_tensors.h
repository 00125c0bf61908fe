#pragma once
// The keys and tensors of state-space mixers, shared by mamba, mamba2 and
// the hybrids' SSM layers: reading llama.cpp's ssm.* keys (with the checks
// that keep the state sizes sane on a hostile file), and declaring one
// layer's Mamba-1 or Mamba-2 tensors.

#include <cstdint>

#include "cria/model/hparams.h"
#include "cria/model/model.h"
#include "model/hparams_keys.h"
#include "model/tensor_table.h"

namespace cria::model {

enum class SsmKind { Mamba1, Mamba2 };

// ssm.conv_kernel, inner_size, state_size, time_step_rank (and group_count
// for Mamba-2, dt_b_c_rms for Mamba-1), all required; sets the recurrent
// state sizes. Throws (keys.fail) for zero or oversized values, heads that
// do not divide the inner width or groups that do not divide the heads.
void read_ssm_hparams(const HParamsKeys& keys, HParams& hp, SsmKind kind);

// One layer's mixer tensors (blk.N.ssm_*), into lw.ssm. `conv_bias_required`:
// mamba and mamba2 require ssm_conv1d.bias; the hybrids' loaders do not.
// `norm_required`: Mamba-2's ssm_norm (falcon-h1's is optional: absent, no
// grouped norm).
void declare_ssm_tensors(const HParams& hp, TensorTable& t, LayerWeights& lw, uint32_t layer, SsmKind kind,
                         bool conv_bias_required = true, bool norm_required = true);

}  // namespace cria::model
