#pragma once
// A media prompt position by position, as a token history holds it: every
// text token, and for every image token a placeholder below 0 derived from
// the image's hash (the same image gives the same placeholder; the server's
// slot cache writes the same kind). Speculative decoding reads such a
// history (spec/text_positions.h): n-gram drafters skip the image positions
// and the heads that read token embeddings take the image's rows there.
// Only for prompts whose images take one position per token (no M-RoPE).

#include <cstdint>
#include <vector>

#include "cria/media/media_prompt.h"

namespace cria::media {

// The placeholder of an image's positions (always < 0).
TokenId image_placeholder(uint64_t hash);

// One entry per position. Throws cria::Error for an M-RoPE prompt.
std::vector<TokenId> prompt_positions(const MediaPrompt& prompt);

// The embedding row the model reads at `pos` when an image token sits
// there (n_embd floats), null for a text position or one beyond the prompt.
const float* image_embedding_at(const MediaPrompt& prompt, int32_t pos);

}  // namespace cria::media
