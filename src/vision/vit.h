#pragma once
// The pieces every vision encoder shares, on the op API: linear layers,
// layer norm, the pre-norm transformer block with non-causal attention, the
// patch embedding. Activations are F32 [width, n_tokens], token-major.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cria/ops/ops.h"
#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"

namespace cria::vision::detail {

using Activations = std::vector<float>;

// y = W x (+ b): w ne [in, out], x [in, n] -> [out, n].
Activations linear(ops::Ops& ops, const VisionTensor& w, const VisionTensor* b, const Activations& x, int64_t n);
// The same into `y` (resized; its storage is reused when large enough).
void linear_into(ops::Ops& ops, const VisionTensor& w, const VisionTensor* b, const Activations& x, int64_t n,
                 Activations& y);
// Layer norm of each token (width = weight's length) with weight and bias.
void layer_norm(ops::Ops& ops, Activations& x, int64_t n, const VisionTensor& w, const VisionTensor& b, float eps);
void activate(ops::Ops& ops, Activation act, Activations& x);

// The image's patches through a conv kernel [p, p, 3, C] (no bias).
Activations patch_embedding(ops::Ops& ops, const FloatImage& image, const VisionTensor& kernel);

// A 2-D rotary for the block's Q and K: pairs of each head and the angle of
// every (token, pair).
struct Rotary {
    std::vector<int32_t> first, second;
    std::vector<float> angle;  // [n_tokens][n_pairs]
};

// The buffers of one block, kept across the blocks of an encode: every block
// needs the same sizes, and a large image's are big (the attention scores of
// 4096 tokens are 64 MiB), so allocating them per block costs page faults.
struct VitScratch {
    Activations cur, q, k, v, attn, o, up, down;
    std::vector<float> qh, kh, vt, oh, scores;  // one head's attention
};

struct BlockOptions {
    Activation activation = Activation::GeluQuick;
    const Rotary* rotary = nullptr;
    // Attention only inside consecutive windows of these sizes (summing to
    // n_tokens); empty: every token sees every token.
    std::vector<int64_t> windows;
    // Reused buffers (null: the block allocates its own).
    VitScratch* scratch = nullptr;
};

// x += Attn(LN1(x)); x += FFN(LN2(x)) with block `il`'s weights.
void vit_block(ops::Ops& ops, const Mmproj& m, int64_t il, Activations& x, int64_t n, const BlockOptions& options);

}  // namespace cria::vision::detail
