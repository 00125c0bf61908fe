#pragma once
// The float64 reference forward of each family, one readable function each
// (llama2.c style), registered in the architectures' definitions (arch.h:
// ArchDefinition::reference_forward). Each returns the logits of every
// position of in.tokens. Every tensor the architecture's table loaded is
// applied (an optional one when the file has it), so the reference and the
// fast path cannot disagree about which tensors a file's model uses.

#include "model/reference/helpers.h"

namespace cria::model::reference {

// llama, qwen2 (NeoX rope, biases), qwen3 (plus an RMSNorm over each Q and K
// head), smollm3 (layers without rope), seed_oss, mistral3, granite
// (embedding, residual and logit scales), exaone4 (post norms only),
// granite_swa (attention sinks), and their mixtures of experts (llama with
// experts, qwen3moe, granitemoe); the hybrids jamba and granitehybrid, and
// falcon-h1 (attention and a Mamba-2 mixer in parallel in every layer).
Logits llama(const Input& in);
// gemma2 and gemma3: scaled embeddings, post norms, GeGLU, sliding windows,
// soft caps (gemma2), QK norms (gemma3).
Logits gemma(const Input& in);
// phi3: fused QKV and gate/up matrices, LongRoPE factors.
Logits phi3(const Input& in);
// qwen3next, qwen35 and qwen35moe: gated delta-net layers (causal
// convolution, gated delta rule, gated RMSNorm) and gated attention layers.
Logits qwen_delta_net(const Input& in);
// mamba (Mamba-1 mixer) and mamba2 (Mamba-2 mixer): state-space models, one
// pre-normed mixer per layer and nothing else.
Logits mamba(const Input& in);
Logits mamba2(const Input& in);
// deepseek2: multi-head latent attention written as the plain multi-head
// attention it equals (each head's keys and values decompressed from the
// latent by k_b / v_b, or by attn_kv_b), leading dense layers, then experts
// with an ungated shared expert.
Logits deepseek2(const Input& in);
// kimi-linear, bailingmoe3 and kimi-k3: Kimi delta attention layers (three
// causal convolutions, the delta rule with a decay per key channel, gated
// RMSNorm) and multi-head latent attention layers (no rope on kimi-linear's
// and kimi-k3's, an output gate on bailingmoe3's and kimi-k3's), leading
// dense layers, then experts with a shared expert (bailingmoe3's trained
// SwiGLU limits; kimi-k3's situ and latent experts), and kimi-k3's attention
// residuals across layers.
Logits kda_hybrid(const Input& in);
// muse-glimmer: normed embeddings, gated attention output, post norms
// (epsilon 1e-8), rope on the sliding-window layers only, soft-capped logits.
Logits muse_glimmer(const Input& in);
// minimax-01: lightning attention (linear attention with a per-head decay)
// and softmax attention layers, residuals of alpha times each block's normed
// input, mixtures of experts.
Logits minimax_01(const Input& in);
// bert and nomic-bert: non-causal post-norm encoders. Returns each
// position's final hidden state (n_embd values) instead of logits: encoders
// have no output head.
Logits bert(const Input& in);

}  // namespace cria::model::reference
