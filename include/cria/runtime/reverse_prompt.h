#pragma once
// -r/--reverse-prompt of `cria run -p`: llama-completion (not interactive)
// halts once a reverse prompt shows at the end of what has been read and
// written. Its test, kept exactly: the text of the last 32 tokens (their
// pieces with special tokens shown), searched from 2 characters before where
// the reverse prompt would start if it ended the text (a reverse prompt may be
// tokenized together with what follows it); or the last token is the reverse
// prompt when that is one token (e.g. "<|im_end|>").

#include <string>
#include <vector>

#include "cria/vocab/vocab.h"

namespace cria::runtime {

class ReversePrompts {
public:
    ReversePrompts(const vocab::Vocab& vocab, std::vector<std::string> prompts);
    bool empty() const { return prompts_.empty(); }
    // `history`: the prompt's tokens then the generated ones. The text of the
    // reverse prompt found, or "" for none.
    std::string found(const std::vector<vocab::TokenId>& history) const;

private:
    const vocab::Vocab& vocab_;
    std::vector<std::string> prompts_;
    std::vector<vocab::TokenId> single_tokens_;  // the reverse prompts that are one token
};

}  // namespace cria::runtime
