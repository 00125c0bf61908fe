// DRY, "don't repeat yourself" (llama_sampler_dry, after koboldcpp PR 982 by
// pi6am): penalises the tokens that would extend a sequence already seen in
// the recent context, exponentially in the length of the repeat.

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "candidate_ops.h"
#include "cria/sampling/samplers.h"
#include "cria/vocab/vocab.h"
#include "token_history.h"

namespace cria::sampling {
namespace {

// head token -> tails (the rest of the breaker after the head, possibly empty).
using Breakers = std::unordered_multimap<TokenId, std::vector<TokenId>>;

constexpr size_t kMaxBreakerChars = 40;  // longer breakers are truncated
constexpr int kMaxBreakerTail = 20;      // tails are clamped to keep the scan linear

// Every token whose text contains `breaker` is a single-token breaker. A token
// whose text ends in a prefix of `breaker` is the head of a breaker whose tail
// is the tokenization of the remaining characters.
void add_breaker(const vocab::Vocab& vocab, const std::vector<std::string>& words, const std::string& breaker,
                 Breakers& out) {
    for (TokenId id = 0; id < static_cast<TokenId>(words.size()); ++id) {
        const std::string& word = words[static_cast<size_t>(id)];
        if (word.find(breaker) != std::string::npos) {
            out.emplace(id, std::vector<TokenId>{});
            continue;
        }
        for (size_t pos = word.find(breaker[0]); pos != std::string::npos; pos = word.find(breaker[0], pos + 1)) {
            bool match = true;
            size_t i = 1;
            for (; i < breaker.size() && pos + i < word.size(); ++i) {
                if (word[pos + i] != breaker[i]) {
                    match = false;
                    break;
                }
            }
            if (!match) {
                continue;
            }
            std::vector<TokenId> tail = vocab.tokenize(breaker.substr(i), false, false);
            if (tail.size() > static_cast<size_t>(kMaxBreakerTail)) {
                tail.resize(kMaxBreakerTail);
            }
            auto [first, last] = out.equal_range(id);
            const bool known = std::any_of(first, last, [&](const auto& kv) { return kv.second == tail; });
            if (!known) {
                out.emplace(id, std::move(tail));
            }
        }
    }
}

class DrySampler final : public Sampler {
public:
    DrySampler(int32_t context_size, float multiplier, float base, int32_t allowed_length, int32_t penalty_last_n,
               Breakers breakers)
        : context_size_(context_size), multiplier_(multiplier), base_(base), allowed_length_(allowed_length),
          penalty_last_n_(penalty_last_n), breakers_(std::move(breakers)),
          history_(enabled() ? static_cast<size_t>(effective_last_n()) : 0) {}

    std::string_view name() const override { return "dry"; }

    void accept(TokenId token) override {
        if (enabled()) {
            history_.push(token);
        }
    }

    void apply(Candidates& candidates) override;

    void reset() override {
        history_.clear();
        repeat_count_.clear();
        max_token_repeat_.clear();
    }

    std::unique_ptr<Sampler> clone() const override { return std::make_unique<DrySampler>(*this); }
    DrySampler(const DrySampler&) = default;

private:
    bool enabled() const { return multiplier_ != 0.0f && base_ >= 1.0f && penalty_last_n_ != 0; }
    int32_t effective_last_n() const {
        return penalty_last_n_ == -1 ? context_size_ : std::max(penalty_last_n_, 0);
    }
    // Length of the longest breaker ending `i` tokens back, -1 if none.
    int breaker_match(int i) const;

    int32_t context_size_;
    float multiplier_, base_;
    int32_t allowed_length_, penalty_last_n_;
    Breakers breakers_;
    detail::TokenHistory history_;
    std::vector<int> repeat_count_;
    std::unordered_map<TokenId, int> max_token_repeat_;
    std::vector<std::pair<TokenId, int>> entries_;
    std::vector<const std::pair<TokenId, int>*> pending_;
};

int DrySampler::breaker_match(int i) const {
    auto [first, last] = breakers_.equal_range(history_.recent(static_cast<size_t>(i)));
    int longest = -1;
    for (auto it = first; it != last; ++it) {
        const int tail_len = static_cast<int>(it->second.size());
        if (tail_len <= longest || tail_len > i) {
            continue;
        }
        bool match = true;
        for (int offset = 0; offset < tail_len; ++offset) {
            // the tail continues towards the present: i-1, i-2, ... tokens back
            if (it->second[static_cast<size_t>(offset)] != history_.recent(static_cast<size_t>(i - offset - 1))) {
                match = false;
                break;
            }
        }
        if (match) {
            longest = tail_len;
        }
    }
    return longest;
}

void DrySampler::apply(Candidates& candidates) {
    if (!enabled()) {
        return;
    }
    const int last_n = std::min({static_cast<int>(history_.size()), effective_last_n(), context_size_});
    if (last_n <= allowed_length_) {
        return;
    }
    auto rat = [&](int i) { return history_.recent(static_cast<size_t>(i)); };

    // Step 1: the most recent sequence breaker limits how far back a repeat may reach.
    int rep_limit = last_n;
    for (int i = 0; i < last_n; ++i) {
        const int longest = breaker_match(i);
        if (longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < allowed_length_) {
        return;
    }

    // Step 2: Z-algorithm over the reversed window. repeat_count[last - k] is
    // the length of the longest suffix of the context that also ends k tokens
    // back (capped at rep_limit). Linear in the window length.
    repeat_count_.assign(static_cast<size_t>(last_n), 0);
    const int last = last_n - 1;
    int lt = 0;
    int rt = 0;
    for (int k = 1; k < last_n; ++k) {
        if (k > rt) {
            int n = 0;
            while (n + k < last_n && rat(n) == rat(n + k)) {
                ++n;
            }
            repeat_count_[static_cast<size_t>(last - k)] = std::min(n, rep_limit);
            if (n > 0) {
                lt = k;
                rt = k + n - 1;
            }
        } else {
            const int p = k - lt;
            const int right_part_len = rt - k + 1;
            if (repeat_count_[static_cast<size_t>(last - p)] < right_part_len) {
                repeat_count_[static_cast<size_t>(last - k)] =
                    std::min(repeat_count_[static_cast<size_t>(last - p)], rep_limit);
            } else {
                int i = rt + 1;
                while (i < last_n && rat(i) == rat(i - k)) {
                    ++i;
                }
                repeat_count_[static_cast<size_t>(last - k)] = std::min(i - k, rep_limit);
                lt = k;
                rt = i - 1;
            }
        }
    }

    // Step 3: the token that followed each long-enough repeat would extend it.
    max_token_repeat_.clear();
    for (int i = 0; i < last_n - 1; ++i) {
        const int repeat_len = repeat_count_[static_cast<size_t>(i)];
        if (repeat_len >= allowed_length_) {
            const TokenId token = rat(last_n - 2 - i);
            auto it = max_token_repeat_.find(token);
            if (it == max_token_repeat_.end() || it->second < repeat_len) {
                max_token_repeat_[token] = repeat_len;
            }
        }
    }
    if (max_token_repeat_.empty()) {
        return;
    }

    // Step 4: penalise, clamping the exponent so base^exp stays a finite float.
    constexpr float kLogFloatMax = 88.7228391f;
    int max_exponent = 0;
    if (base_ > 1.000001f) {
        max_exponent = static_cast<int>(kLogFloatMax / std::log(base_));
    }
    entries_.assign(max_token_repeat_.begin(), max_token_repeat_.end());
    using Entry = std::pair<TokenId, int>;
    detail::for_each_present<Entry>(
        candidates, entries_, pending_, [](const Entry& e) { return e.first; },
        [&](Candidate& c, const Entry& e) {
            // A token that is itself a complete breaker is never penalised.
            auto [first, end] = breakers_.equal_range(c.id);
            const bool single_token_breaker =
                std::any_of(first, end, [](const auto& kv) { return kv.second.empty(); });
            if (single_token_breaker) {
                return;
            }
            int repeat_exp = e.second - allowed_length_;
            if (max_exponent > 0 && repeat_exp > max_exponent) {
                repeat_exp = max_exponent;
            }
            c.logit -= multiplier_ * std::pow(base_, static_cast<float>(repeat_exp));
        });
    candidates.set_sorted(false);
}

}  // namespace

std::unique_ptr<Sampler> make_dry(const vocab::Vocab& vocab, int32_t context_size, float multiplier, float base,
                                  int32_t allowed_length, int32_t penalty_last_n,
                                  const std::vector<std::string>& sequence_breakers) {
    Breakers breakers;
    const bool enabled = multiplier != 0.0f && base >= 1.0f && penalty_last_n != 0;
    if (enabled && !sequence_breakers.empty()) {
        // Each token's text as llama.cpp's detokenize({id}, special = true) gives it.
        vocab::DetokenizeOptions as_text;
        as_text.unparse_special = true;
        std::vector<std::string> words(vocab.size());
        for (TokenId id = 0; id < static_cast<TokenId>(words.size()); ++id) {
            const TokenId one[1] = {id};
            words[static_cast<size_t>(id)] = vocab.detokenize(one, as_text);
        }
        for (std::string breaker : sequence_breakers) {
            if (breaker.empty()) {
                continue;  // llama.cpp skips empty breakers with a warning
            }
            if (breaker.size() > kMaxBreakerChars) {
                breaker.resize(kMaxBreakerChars);
            }
            add_breaker(vocab, words, breaker, breakers);
        }
    }
    return std::make_unique<DrySampler>(context_size, multiplier, base, allowed_length, penalty_last_n,
                                        std::move(breakers));
}

std::unique_ptr<Sampler> make_dry_from_tokens(int32_t context_size, float multiplier, float base,
                                              int32_t allowed_length, int32_t penalty_last_n,
                                              const std::vector<std::vector<TokenId>>& sequence_breakers) {
    Breakers breakers;
    for (const auto& breaker : sequence_breakers) {
        if (!breaker.empty()) {
            breakers.emplace(breaker.front(), std::vector<TokenId>(breaker.begin() + 1, breaker.end()));
        }
    }
    return std::make_unique<DrySampler>(context_size, multiplier, base, allowed_length, penalty_last_n,
                                        std::move(breakers));
}

}  // namespace cria::sampling
