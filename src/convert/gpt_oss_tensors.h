#pragma once
// The gpt-oss checkpoint tensors that are not one plain weight, mapped as
// llama.cpp's converter maps them (GptOssModel):
//  - mlp.experts.gate_up_proj_blocks/_scales (MXFP4, gate and up rows
//    interleaved: even rows gate, odd rows up) -> ffn_gate_exps, ffn_up_exps,
//    kept MXFP4 (see mxfp4_repack.h); down_proj_blocks/_scales -> ffn_down_exps;
//  - the same in bf16 (mlp.experts.gate_up_proj [E, n_embd, 2F] and
//    down_proj [E, F, n_embd], stored input-major, so transposed);
//  - mlp.experts.gate_up_proj_bias [E, 2F] -> ffn_gate_exps.bias, ffn_up_exps.bias
//    (even/odd columns), down_proj_bias -> ffn_down_exps.bias;
//  - self_attn.sinks -> attn_sinks.weight.

#include <string>
#include <vector>

#include "checkpoint.h"
#include "planned_tensor.h"

namespace cria::convert {

// Plans `member` (the name after "model.layers.<layer>.") when it is one of
// the tensors above and returns true; false for any other. `n_expert` comes
// from config.json. Throws cria::Error for a missing partner (blocks without
// scales), a wrong dtype or shapes that do not fit.
bool plan_gpt_oss_tensor(const Checkpoint& ckpt, const std::string& hf_name, int layer, const std::string& member,
                         uint32_t n_expert, std::vector<Planned>& plan);

}  // namespace cria::convert
