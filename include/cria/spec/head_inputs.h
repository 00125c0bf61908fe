#pragma once
// The input embedding rows of a draft head's batch (EAGLE-3, MTP): each
// row is the token embedding of its token, except at an image position
// (token < 0, text_positions.h), where the target read an image embedding,
// not a token: that row is the embedding the caller gives (input_rows[i],
// the head's width), or zeros when it gives none (the head then sees only
// the target's features there). Drafts are only proposals: whatever a head
// reads, verification keeps the output exact.

#include <cstdint>

#include "cria/ops/ops.h"

namespace cria::spec {

// out: F32 [d, n], contiguous (d = token_embd's row width). input_rows may
// be null; an entry of it is read only where tokens[i] < 0.
void embed_head_inputs(ops::Ops& ops, const ops::TensorView& token_embd, const int32_t* tokens, int64_t n,
                       const float* const* input_rows, const ops::TensorView& out);

}  // namespace cria::spec
