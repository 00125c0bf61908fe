#pragma once
// The state-space mixer blocks (llama.cpp's build_mamba_layer and
// build_mamba2_layer), as residual blocks: x += ssm_out(mixer(rms_norm(x) ·
// attn_norm)). The mixer's causal convolution and selective scan keep one
// state per sequence in the memory (AttentionMemory::recurrent_state); each
// micro-batch is walked as runs of one sequence, and when the memory keeps
// every position (a speculative checkpoint is open) the scan advances token
// by token and records the state after each one.

#include <cstdint>

#include "model/blocks.h"

namespace cria::model::blocks {

// Mamba-1: [x | z] = in(h); xc = silu(conv(x) + b); [dt_r | B | C] = ssm_x(xc)
// (RMS-normed without weight when hp.ssm_dt_b_c_rms, with weights when the
// layer has dt/B/C norms: jamba); dt = ssm_dt(dt_r) + bias; y = scan(...) +
// D ⊙ xc; out(y ⊙ silu(z)).
void mamba_block(Step& s, uint32_t layer);

// Mamba-2: [z | xBC | dt] = in(h); xBC = silu(conv(xBC) + b); y = scan(x, dt +
// dt_bias, A, B, C) + D ⊙ x (D per head); y ⊙= silu(z); grouped RMS norm
// times ssm_norm when the layer has it; out(y).
void mamba2_block(Step& s, uint32_t layer);
// The Mamba-2 mixer alone, for a layer that runs it beside attention
// (falcon-h1): reads the normed input in ws.h, leaves out(y) in ws.o and the
// residual stream as it is.
void mamba2_mixer(Step& s, uint32_t layer);

// LFM2's gated short convolution: [B | C | x] = in(h); y = C ⊙ conv(B ⊙ x)
// (no bias, no activation; the state holds B ⊙ x); out(y).
void shortconv_block(Step& s, uint32_t layer);

// The recurrent state sizes of the two mixers (floats per layer and sequence):
// conv (K-1)·channels, SSM N·d_inner.
uint32_t mamba_conv_floats(const HParams& hp);
uint32_t mamba2_conv_floats(const HParams& hp);
uint32_t ssm_state_floats(const HParams& hp);

}  // namespace cria::model::blocks
