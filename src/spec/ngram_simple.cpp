// ngram-simple: draft what followed the latest earlier occurrence of the
// last n tokens (llama.cpp's common_ngram_simple_draft).

#include <algorithm>

#include "cria/core/error.h"
#include "cria/spec/ngram.h"
#include "cria/spec/text_positions.h"

namespace cria::spec {

NgramSimpleDrafter::NgramSimpleDrafter(const NgramParams& params) : params_(params) {
    if (params.size_n < 1 || params.size_m < 1)
        throw Error("ngram-simple: size-n and size-m must be at least 1");
}

void NgramSimpleDrafter::begin(const BeginInput& /*input*/) {}

void NgramSimpleDrafter::draft(const DraftInput& input, int n_max, Draft& out) {
    const std::vector<TokenId>& history = input.history;
    const TokenId last = input.last;
    const size_t n = static_cast<size_t>(params_.size_n);
    const size_t m = static_cast<size_t>(params_.size_m);
    const size_t len = history.size();
    // The pattern (the last n-1 history tokens and `last`) and at least one
    // full draft must fit in front of it.
    if (len <= n + m + 1) return;
    // A pattern with an image position in it matches nothing (no n-gram spans an image).
    if (!is_text(last) || !all_text(history.data() + (len - n + 1), n - 1)) return;
    auto matches_at = [&](size_t j) {
        for (size_t k = 0; k + 1 < n; ++k)
            if (history[j + k] != history[len - n + 1 + k]) return false;
        return history[j + n - 1] == last;
    };
    // Latest occurrence first; position 0 is skipped as llama.cpp does.
    size_t found = 0;
    for (size_t j = len - n - 1; j > 0; --j)
        if (matches_at(j)) {
            found = j;
            break;
        }
    if (found == 0) return;
    // The continuation stops before the next image.
    const size_t available = text_prefix(history.data() + found + n, std::min(m, len - (found + n)));
    // llama.cpp drafts nothing when fewer than n tokens follow the match.
    if (available < n) return;
    const size_t count = std::min(available, static_cast<size_t>(std::max(n_max, 0)));
    out.tokens.insert(out.tokens.end(), history.begin() + static_cast<std::ptrdiff_t>(found + n),
                      history.begin() + static_cast<std::ptrdiff_t>(found + n + count));
}

}  // namespace cria::spec
