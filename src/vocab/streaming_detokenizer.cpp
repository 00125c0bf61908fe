#include "cria/vocab/streaming_detokenizer.h"

#include "vocab/utf8.h"

namespace cria::vocab {

std::string StreamingDetokenizer::push(TokenId id) {
    // Like detokenize(): the first piece loses the space SentencePiece added.
    pending_ += vocab_.token_to_piece(id, render_special_, first_ && vocab_.add_space_prefix() ? 1 : 0);
    first_ = false;
    const size_t ready = utf8::complete_prefix_length(pending_);
    std::string out = pending_.substr(0, ready);
    pending_.erase(0, ready);
    return out;
}

std::string StreamingDetokenizer::flush() {
    std::string out;
    out.swap(pending_);
    return out;
}

}  // namespace cria::vocab
