// llama-completion's reverse-prompt test (see reverse_prompt.h).

#include "cria/runtime/reverse_prompt.h"

#include <algorithm>

namespace cria::runtime {

namespace {
constexpr size_t kWindowTokens = 32;  // common_sampler_prev_str(smpl, ctx, 32)
constexpr size_t kExtraPadding = 2;   // not interactive: a little room for what follows
}  // namespace

ReversePrompts::ReversePrompts(const vocab::Vocab& vocab, std::vector<std::string> prompts)
    : vocab_(vocab), prompts_(std::move(prompts)) {
    for (const auto& p : prompts_) {
        const auto ids = vocab_.tokenize(p, false, true);
        if (ids.size() == 1) single_tokens_.push_back(ids[0]);
    }
}

std::string ReversePrompts::found(const std::vector<vocab::TokenId>& history) const {
    if (prompts_.empty() || history.empty()) return {};
    std::string text;
    for (size_t i = history.size() - std::min(history.size(), kWindowTokens); i < history.size(); ++i)
        text += vocab_.token_to_piece(history[i], true);
    for (const auto& p : prompts_) {
        const size_t start = text.size() > p.size() + kExtraPadding ? text.size() - (p.size() + kExtraPadding) : 0;
        if (text.find(p, start) != std::string::npos) return p;
    }
    if (!text.empty()) {
        for (size_t i = 0; i < single_tokens_.size(); ++i)
            if (history.back() == single_tokens_[i]) return vocab_.token_to_piece(single_tokens_[i], true);
    }
    return {};
}

}  // namespace cria::runtime
