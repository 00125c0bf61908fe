#pragma once
// Positions of a history that hold no token. A prompt with images puts the
// image's embeddings into the target's cache; the history a drafter sees
// (DraftInput::history) has one entry per position all the same, and an
// image position's entry is negative (a placeholder: the server writes one
// per image hash, cria run the same). Drafters that read tokens treat those
// entries as gaps: n-gram drafters never match, learn or draft an n-gram
// that contains one (no n-gram spans an image), the draft model reads the
// text around them, and the heads that take a token's embedding with the
// target's features (EAGLE-3, MTP) take the image's embedding row there
// (DraftInput::embedding_at).

#include <algorithm>
#include <cstddef>
#include <functional>

#include "cria/runtime/batch.h"

namespace cria::spec {

// A history entry that is a token (not an image position).
inline bool is_text(runtime::TokenId t) { return t >= 0; }

// Whether tokens[0..n) are all text.
inline bool all_text(const runtime::TokenId* tokens, size_t n) {
    return std::all_of(tokens, tokens + n, is_text);
}

// How many of tokens[0..n) come before the first image position.
inline size_t text_prefix(const runtime::TokenId* tokens, size_t n) {
    return static_cast<size_t>(std::find_if_not(tokens, tokens + n, is_text) - tokens);
}

// The input embedding the target read at an image position (n_embd floats
// of the target's width), or null when it is not known.
using EmbeddingAt = std::function<const float*(int32_t pos)>;

}  // namespace cria::spec
