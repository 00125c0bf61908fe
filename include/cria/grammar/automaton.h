#pragma once
// The grammar as a lazily built automaton over bytes.
//
// A grammar position set is llama.cpp's "stacks": each stack is a path of
// element positions through the rules, its top the next class (or token
// element) to match. A set of stacks plus the bytes of an unfinished UTF-8
// character is one state. States are interned, and the transition on each
// byte is computed once and remembered, so the sampler's walk over the
// vocabulary is mostly table lookups: the same (state, byte) pair is
// expanded once however many tokens share it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cria/grammar/gbnf.h"

namespace cria::grammar {

using StateId = int32_t;
inline constexpr StateId kDeadState = -1;

class Automaton {
public:
    explicit Automaton(std::shared_ptr<const Grammar> grammar);

    const Grammar& grammar() const { return *grammar_; }

    StateId initial() const { return initial_; }
    // The state after one more byte, or kDeadState when no string of the
    // grammar continues that way (partial characters are checked too: a
    // lead byte is dead when no class can accept any of its completions).
    StateId step(StateId state, uint8_t byte) {
        if (state < 0) return kDeadState;
        StateId cached = next_[static_cast<size_t>(state) * 256 + byte];
        return cached != kUnknown ? cached : step_slow(state, byte);
    }
    StateId step(StateId state, std::string_view bytes);
    // Matches a whole token against <[id]> / !<[id]> elements on top of the stacks.
    StateId step_token(StateId state, int32_t token);
    // All stacks of both states (same partial character expected).
    StateId merge(StateId a, StateId b);

    bool can_end(StateId state) const { return states_[static_cast<size_t>(state)].can_end; }
    bool in_partial_char(StateId state) const { return states_[static_cast<size_t>(state)].partial_left != 0; }
    bool has_token_elements(StateId state) const { return states_[static_cast<size_t>(state)].has_token_tops; }
    // Whether a token element on top of a stack of `state` accepts `token`.
    bool token_element_accepts(StateId state, int32_t token) const;

    size_t state_count() const { return states_.size(); }
    // Forgets every state but `keep`, which is renumbered (returned). Called
    // when the cache grows past its budget.
    StateId reset_cache(StateId keep);
    // Bumped on every reset_cache, so callers can drop what they keyed by state.
    uint64_t generation() const { return generation_; }

private:
    using Stack = std::vector<const Element*>;
    struct State {
        std::vector<Stack> stacks;  // sorted, unique
        uint32_t partial_value = 0;
        uint8_t partial_left = 0;   // continuation bytes still expected
        uint8_t partial_len = 0;    // length of the whole sequence (for the overlong check)
        bool can_end = false;
        bool has_token_tops = false;
    };
    static constexpr StateId kUnknown = -2;

    StateId intern(std::vector<Stack> stacks, uint32_t partial_value, uint8_t partial_left, uint8_t partial_len);
    void advance(Stack stack, std::vector<Stack>& out) const;
    StateId step_slow(StateId state, uint8_t byte);
    StateId compute_step(StateId state, uint8_t byte);
    StateId accept_code_point(const State& s, uint32_t cp);
    bool partial_possible(const State& s, uint32_t low, uint32_t high) const;

    std::shared_ptr<const Grammar> grammar_;
    std::vector<State> states_;
    // Transitions of all states in one table (state * 256 + byte), kUnknown
    // until computed: the sampler's inner loop is a load from here.
    std::vector<StateId> next_;
    std::unordered_map<std::string, StateId> index_;
    StateId initial_ = kDeadState;
    uint64_t generation_ = 0;
};

// Convenience for tests and tools: does the grammar match `text` entirely?
bool matches(const Grammar& grammar, std::string_view text);

}  // namespace cria::grammar
