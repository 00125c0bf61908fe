#pragma once
// The forward pass of the bert-style encoders (bert, nomic-bert): embeddings
// with token types, absolute positions and a LayerNorm; post-norm layers
// whose attention goes both ways over the sequence; the final hidden state of
// every output row (no output head: pooling and the classifier head are the
// context's). Built from the shared attention block (blocks.h).

#include "model/blocks.h"

namespace cria::model::blocks {

enum class EncoderFfn {
    Gelu,    // bert: down(gelu(up x + b) ) + b, GELU's tanh form (ggml_gelu)
    Swiglu,  // nomic-bert: down(silu(gate x) * up x), no biases
};

// ws.x = LN(token_embd[t] + token_types[0] + position_embd[p]) (positions
// only when `positions`); then per layer x = LN(x + attn(x)), x = LN(x + ffn(x));
// then the hidden states of the output rows. Throws cria::Error when logits
// are asked for (an encoder has no output head) or a position is beyond the
// learned positions.
void encoder_forward(Step& s, float* logits, float* hidden, bool positions, EncoderFfn ffn);

}  // namespace cria::model::blocks
