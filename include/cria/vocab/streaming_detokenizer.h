#pragma once
// Turns a stream of token ids into text as they arrive, never emitting half
// a UTF-8 character: bytes of a character split over several byte tokens are
// held back until the character is complete. The concatenated output equals
// vocab.detokenize(all ids, {.clean_spaces = 0}) for the same options.

#include <string>

#include "cria/vocab/vocab.h"

namespace cria::vocab {

class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Vocab& vocab, bool render_special = false)
        : vocab_(vocab), render_special_(render_special) {}

    // Text that became complete with this token (possibly empty).
    std::string push(TokenId id);
    // Whatever is still held back (an unfinished or invalid sequence at the end).
    std::string flush();

private:
    const Vocab& vocab_;
    bool render_special_;
    bool first_ = true;
    std::string pending_;
};

}  // namespace cria::vocab
