// The grammar sampler: token masks from the automaton, lazy triggers.

#include "cria/grammar/sampler.h"

#include <algorithm>
#include <limits>
#include <regex>

#include "cria/core/error.h"

namespace cria::grammar {
namespace {

std::vector<std::regex> compile(const std::vector<std::string>& patterns) {
    std::vector<std::regex> out;
    for (const auto& p : patterns) {
        try {
            out.emplace_back(p, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            throw Error("grammar: bad trigger pattern '" + p + "': " + e.what());
        }
    }
    return out;
}

bool test_bit(const std::vector<uint64_t>& mask, vocab::TokenId id) {
    auto u = static_cast<uint32_t>(id);
    return (mask[u / 64] >> (u % 64)) & 1u;
}

}  // namespace

GrammarSampler::GrammarSampler(const vocab::Vocab& vocab, std::string_view gbnf, SamplerOptions options)
    : index_(VocabIndex::build(vocab)), options_(std::move(options)) {
    const VocabIndex& index = *index_;
    TokenResolver resolve = [&](std::string_view text) -> int32_t { return index.find(text); };
    grammar_ = std::make_shared<const Grammar>(parse_gbnf(gbnf, options_.root_rule, resolve));
    init();
}

GrammarSampler::GrammarSampler(std::shared_ptr<const VocabIndex> index, std::shared_ptr<const Grammar> grammar, SamplerOptions options)
    : index_(std::move(index)), grammar_(std::move(grammar)), options_(std::move(options)) {
    if (!index_ || !grammar_) throw Error("grammar: sampler needs a vocabulary index and a grammar");
    init();
}

void GrammarSampler::init() {
    if (options_.lazy && options_.triggers.empty()) throw Error("grammar: a lazy grammar needs at least one trigger");
    for (vocab::TokenId t : options_.triggers.tokens) {
        if (t < 0 || static_cast<size_t>(t) >= index_->size()) throw Error("grammar: trigger token " + std::to_string(t) + " is not in the vocabulary");
    }
    patterns_ = compile(options_.triggers.patterns);
    full_patterns_ = compile(options_.triggers.full_patterns);
    for (const auto& rule : grammar_->rules) {
        for (const Element& e : rule) {
            if ((e.type == ElementType::Token || e.type == ElementType::TokenNot) && e.value >= index_->size()) {
                throw Error("grammar: token <[" + std::to_string(e.value) + "]> is not in the vocabulary");
            }
        }
    }
    automaton_ = std::make_unique<Automaton>(grammar_);
    reset();
}

void GrammarSampler::reset() {
    state_ = automaton_->initial();
    active_ = !options_.lazy;
    trigger_buffer_.clear();
}

bool GrammarSampler::can_end() const { return active_ ? automaton_->can_end(state_) : true; }

const std::vector<uint64_t>& GrammarSampler::mask() {
    if (automaton_->generation() != mask_generation_) {
        masks_.clear();
        mask_generation_ = automaton_->generation();
    }
    ++clock_;
    if (options_.mask_cache_entries) {
        auto it = masks_.find(state_);
        if (it != masks_.end()) {
            it->second.last_use = clock_;
            return it->second.bits;
        }
    }
    const size_t n = index_->size();
    std::vector<uint64_t> bits((n + 63) / 64, 0);
    index_->allowed_by_text(*automaton_, state_, bits);
    for (size_t i = 0; i < n; ++i) {
        auto id = static_cast<vocab::TokenId>(i);
        bool ok = (index_->is_eog(id) && automaton_->can_end(state_)) ||
                  (automaton_->has_token_elements(state_) && automaton_->token_element_accepts(state_, id));
        if (ok) bits[i / 64] |= uint64_t{1} << (i % 64);
    }
    if (!options_.mask_cache_entries) {
        scratch_mask_ = std::move(bits);
        return scratch_mask_;
    }
    if (masks_.size() >= options_.mask_cache_entries) {
        auto oldest = std::min_element(masks_.begin(), masks_.end(),
                                       [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
        masks_.erase(oldest);
    }
    auto& slot = masks_[state_];
    slot.bits = std::move(bits);
    slot.last_use = clock_;
    return slot.bits;
}

bool GrammarSampler::allows(vocab::TokenId token) {
    if (!active_) return true;
    if (token < 0 || static_cast<size_t>(token) >= index_->size()) return false;
    return test_bit(mask(), token);
}

void GrammarSampler::apply(std::span<Candidate> candidates) {
    if (!active_) return;
    const auto& bits = mask();
    const size_t n = index_->size();
    for (Candidate& c : candidates) {
        if (c.id < 0 || static_cast<size_t>(c.id) >= n || !test_bit(bits, c.id)) c.logit = -std::numeric_limits<float>::infinity();
    }
    maybe_trim_cache();
}

void GrammarSampler::apply(std::span<float> logits) {
    if (!active_) return;
    const auto& bits = mask();
    const size_t n = std::min(logits.size(), index_->size());
    for (size_t i = 0; i < n; ++i) {
        if (!((bits[i / 64] >> (i % 64)) & 1u)) logits[i] = -std::numeric_limits<float>::infinity();
    }
    for (size_t i = n; i < logits.size(); ++i) logits[i] = -std::numeric_limits<float>::infinity();
    maybe_trim_cache();
}

void GrammarSampler::accept(vocab::TokenId token) {
    if (token < 0 || static_cast<size_t>(token) >= index_->size()) throw Error("grammar: token id " + std::to_string(token) + " out of range");
    const std::string& piece = index_->piece(token);
    if (!active_) {
        const auto& trig = options_.triggers.tokens;
        if (std::find(trig.begin(), trig.end(), token) != trig.end()) {
            active_ = true;
            trigger_buffer_.clear();
            accept(token);
            return;
        }
        trigger_buffer_ += piece;
        check_triggers();
        return;
    }
    if (index_->is_eog(token) && automaton_->can_end(state_)) return;  // generation ends here
    StateId by_text = (!index_->is_eog(token) && !piece.empty()) ? automaton_->step(state_, piece) : kDeadState;
    StateId by_token = automaton_->step_token(state_, token);
    StateId next = automaton_->merge(by_text, by_token);
    if (next == kDeadState) {
        throw Error("grammar: token " + std::to_string(token) + " ('" + piece + "') is not allowed here");
    }
    state_ = next;
    maybe_trim_cache();
}

void GrammarSampler::feed_text(std::string_view text) {
    StateId next = automaton_->step(state_, text);
    if (next == kDeadState) throw Error("grammar: trigger text '" + std::string(text) + "' does not match the grammar");
    state_ = next;
}

void GrammarSampler::check_triggers() {
    size_t best = std::string::npos;
    for (const auto& w : options_.triggers.words) {
        size_t at = trigger_buffer_.find(w);
        if (at != std::string::npos && at < best) best = at;
    }
    auto start_of = [](const std::smatch& m) {
        return static_cast<size_t>(m.size() > 1 && m[1].matched ? m.position(1) : m.position(0));
    };
    std::smatch m;
    for (const std::regex& re : patterns_) {
        if (std::regex_search(trigger_buffer_, m, re)) best = std::min(best, start_of(m));
    }
    for (const std::regex& re : full_patterns_) {
        if (std::regex_match(trigger_buffer_, m, re)) best = std::min(best, start_of(m));
    }
    if (best == std::string::npos) return;
    active_ = true;
    std::string text = trigger_buffer_.substr(best);
    trigger_buffer_.clear();
    feed_text(text);
}

void GrammarSampler::maybe_trim_cache() {
    if (automaton_->state_count() > options_.max_cached_states) state_ = automaton_->reset_cache(state_);
}

}  // namespace cria::grammar
