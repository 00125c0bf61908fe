// A media prompt position by position (see prompt_positions.h).

#include "cria/media/prompt_positions.h"

#include "cria/core/error.h"

namespace cria::media {

TokenId image_placeholder(uint64_t hash) { return -2 - static_cast<TokenId>(hash & 0x3fffffff); }

std::vector<TokenId> prompt_positions(const MediaPrompt& prompt) {
    if (prompt.mrope) throw Error("an M-RoPE prompt's images take fewer positions than tokens");
    std::vector<TokenId> out;
    for (const PromptChunk& c : prompt.chunks) {
        if (c.is_image()) out.insert(out.end(), static_cast<size_t>(c.image->n_tokens), image_placeholder(c.image->hash));
        else out.insert(out.end(), c.tokens.begin(), c.tokens.end());
    }
    return out;
}

const float* image_embedding_at(const MediaPrompt& prompt, int32_t pos) {
    if (pos < 0 || prompt.mrope) return nullptr;
    int64_t first = 0;
    for (const PromptChunk& c : prompt.chunks) {
        const int64_t n = c.is_image() ? c.image->n_tokens : static_cast<int64_t>(c.tokens.size());
        if (pos < first + n) return c.is_image() ? c.image->embd.data() + (pos - first) * c.image->n_embd : nullptr;
        first += n;
    }
    return nullptr;
}

}  // namespace cria::media
