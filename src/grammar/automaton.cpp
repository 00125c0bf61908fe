// Grammar stacks, their expansion through rule references, and the
// interned byte-level transitions over them.

#include "cria/grammar/automaton.h"

#include <algorithm>
#include <cstring>

#include "cria/core/error.h"

namespace cria::grammar {
namespace {

bool is_alt_end(const Element* e) { return e->type == ElementType::End || e->type == ElementType::Alt; }

// Bounds that keep a pathological grammar from eating the machine: an
// ambiguous grammar can multiply stacks; a deep one can grow them.
constexpr size_t kMaxStacksPerState = 1 << 16;
constexpr size_t kMaxExpansionSteps = 1 << 20;

}  // namespace

Automaton::Automaton(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    if (!grammar_ || grammar_->root >= grammar_->rules.size()) throw Error("grammar: no root rule");
    std::vector<Stack> stacks;
    const auto& root = grammar_->rules[grammar_->root];
    // One stack per alternative of the root rule.
    for (const Element* pos = root.data();;) {
        Stack stack;
        if (!is_alt_end(pos)) stack.push_back(pos);
        advance(std::move(stack), stacks);
        while (!is_alt_end(pos)) ++pos;
        if (pos->type == ElementType::End) break;
        ++pos;
    }
    initial_ = intern(std::move(stacks), 0, 0, 0);
}

// Expands rule references on top of `stack` until every resulting stack
// is empty (the grammar is complete) or has a class / token on top.
void Automaton::advance(Stack stack, std::vector<Stack>& out) const {
    std::vector<Stack> todo;
    todo.push_back(std::move(stack));
    size_t steps = 0;
    while (!todo.empty()) {
        if (++steps > kMaxExpansionSteps || out.size() > kMaxStacksPerState) {
            throw Error("grammar: too ambiguous (more than " + std::to_string(kMaxStacksPerState) + " parse stacks)");
        }
        Stack s = std::move(todo.back());
        todo.pop_back();
        if (s.empty() || s.back()->type != ElementType::RuleRef) {
            out.push_back(std::move(s));
            continue;
        }
        const Element* ref = s.back();
        s.pop_back();
        if (!is_alt_end(ref + 1)) s.push_back(ref + 1);
        const auto& rule = grammar_->rules[ref->value];
        for (const Element* alt = rule.data();;) {
            Stack next = s;
            if (!is_alt_end(alt)) next.push_back(alt);
            todo.push_back(std::move(next));
            while (!is_alt_end(alt)) ++alt;
            if (alt->type == ElementType::End) break;
            ++alt;
        }
    }
}

StateId Automaton::intern(std::vector<Stack> stacks, uint32_t partial_value, uint8_t partial_left, uint8_t partial_len) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.empty()) return kDeadState;
    std::string key;
    key.append(reinterpret_cast<const char*>(&partial_value), sizeof partial_value);
    key += static_cast<char>(partial_left);
    key += static_cast<char>(partial_len);
    for (const Stack& s : stacks) {
        key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(const Element*));
        const Element* sep = nullptr;
        key.append(reinterpret_cast<const char*>(&sep), sizeof sep);
    }
    auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<StateId>(states_.size()));
    if (!inserted) return it->second;
    State st;
    st.partial_value = partial_value;
    st.partial_left = partial_left;
    st.partial_len = partial_len;
    for (const Stack& s : stacks) {
        if (s.empty()) st.can_end = partial_left == 0;
        else if (s.back()->type == ElementType::Token || s.back()->type == ElementType::TokenNot) st.has_token_tops = true;
    }
    st.stacks = std::move(stacks);
    states_.push_back(std::move(st));
    next_.resize(states_.size() * 256, kUnknown);
    return it->second;
}

StateId Automaton::step_slow(StateId state, uint8_t byte) {
    StateId result = compute_step(state, byte);
    next_[static_cast<size_t>(state) * 256 + byte] = result;
    return result;
}

StateId Automaton::step(StateId state, std::string_view bytes) {
    for (char c : bytes) {
        state = step(state, static_cast<uint8_t>(c));
        if (state == kDeadState) break;
    }
    return state;
}

// Smallest code point each sequence length may encode (shorter forms are
// overlong and invalid).
static uint32_t min_code_point(uint8_t len) { return len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0; }

StateId Automaton::compute_step(StateId state, uint8_t b) {
    const State& s = states_[static_cast<size_t>(state)];
    uint32_t value = 0;
    uint8_t left = 0, len = 0;
    if (s.partial_left == 0) {
        if (b < 0x80) return accept_code_point(s, b);
        int extra = (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
        if (extra < 0) return kDeadState;  // stray continuation byte or invalid lead
        value = b & (0x3Fu >> extra);
        left = static_cast<uint8_t>(extra);
        len = static_cast<uint8_t>(extra + 1);
    } else {
        if ((b & 0xC0) != 0x80) return kDeadState;
        value = (s.partial_value << 6) | (b & 0x3Fu);
        left = static_cast<uint8_t>(s.partial_left - 1);
        len = s.partial_len;
        if (left == 0) {
            if (value > 0x10FFFF || value < min_code_point(len) || (value >= 0xD800 && value <= 0xDFFF)) return kDeadState;
            return accept_code_point(s, value);
        }
    }
    // Still inside a character: alive only if some completion can match.
    uint32_t low = std::max(value << (6 * left), min_code_point(len));
    uint32_t high = std::min(value << (6 * left) | ((1u << (6 * left)) - 1), 0x10FFFFu);
    if (low > high || (low >= 0xD800 && high <= 0xDFFF)) return kDeadState;  // surrogates are not UTF-8
    if (!partial_possible(s, low, high)) return kDeadState;
    std::vector<Stack> stacks = s.stacks;
    return intern(std::move(stacks), value, left, len);
}

// Can some code point in [low, high] be matched by a class on top of a stack?
bool Automaton::partial_possible(const State& s, uint32_t low, uint32_t high) const {
    for (const Stack& stack : s.stacks) {
        if (stack.empty()) continue;
        const Element* pos = stack.back();
        switch (pos->type) {
            case ElementType::CharAny: return true;
            case ElementType::Char: {
                do {
                    uint32_t lo = pos->value, hi = pos->value;
                    if (pos[1].type == ElementType::CharRangeUpper) { hi = pos[1].value; pos += 2; } else { pos += 1; }
                    if (lo <= high && low <= hi) return true;
                } while (pos->type == ElementType::CharAlt);
                break;
            }
            case ElementType::CharNot: {
                // Impossible only when one excluded range covers the whole span.
                bool covered = false;
                do {
                    uint32_t lo = pos->value, hi = pos->value;
                    if (pos[1].type == ElementType::CharRangeUpper) { hi = pos[1].value; pos += 2; } else { pos += 1; }
                    if (lo <= low && high <= hi) covered = true;
                } while (pos->type == ElementType::CharAlt);
                if (!covered) return true;
                break;
            }
            default: break;  // token elements never match bytes
        }
    }
    return false;
}

StateId Automaton::accept_code_point(const State& s, uint32_t cp) {
    std::vector<Stack> next;
    for (const Stack& stack : s.stacks) {
        if (stack.empty()) continue;
        const Element* top = stack.back();
        if (top->type != ElementType::Char && top->type != ElementType::CharNot && top->type != ElementType::CharAny) continue;
        const Element* after = nullptr;
        if (!class_matches(top, cp, &after)) continue;
        Stack moved(stack.begin(), stack.end() - 1);
        if (!is_alt_end(after)) moved.push_back(after);
        advance(std::move(moved), next);
    }
    return intern(std::move(next), 0, 0, 0);
}

bool Automaton::token_element_accepts(StateId state, int32_t token) const {
    if (state < 0) return false;
    const State& s = states_[static_cast<size_t>(state)];
    if (!s.has_token_tops || s.partial_left) return false;
    for (const Stack& stack : s.stacks) {
        if (stack.empty()) continue;
        const Element* top = stack.back();
        if (top->type == ElementType::Token && top->value == static_cast<uint32_t>(token)) return true;
        if (top->type == ElementType::TokenNot && top->value != static_cast<uint32_t>(token)) return true;
    }
    return false;
}

StateId Automaton::step_token(StateId state, int32_t token) {
    if (!token_element_accepts(state, token)) return kDeadState;
    std::vector<Stack> next;
    for (const Stack& stack : states_[static_cast<size_t>(state)].stacks) {
        if (stack.empty()) continue;
        const Element* top = stack.back();
        bool ok = (top->type == ElementType::Token && top->value == static_cast<uint32_t>(token)) ||
                  (top->type == ElementType::TokenNot && top->value != static_cast<uint32_t>(token));
        if (!ok) continue;
        Stack moved(stack.begin(), stack.end() - 1);
        if (!is_alt_end(top + 1)) moved.push_back(top + 1);
        advance(std::move(moved), next);
    }
    return intern(std::move(next), 0, 0, 0);
}

StateId Automaton::merge(StateId a, StateId b) {
    if (a < 0) return b;
    if (b < 0) return a;
    const State& sa = states_[static_cast<size_t>(a)];
    std::vector<Stack> stacks = sa.stacks;
    const auto& sb = states_[static_cast<size_t>(b)].stacks;
    stacks.insert(stacks.end(), sb.begin(), sb.end());
    return intern(std::move(stacks), sa.partial_value, sa.partial_left, sa.partial_len);
}

StateId Automaton::reset_cache(StateId keep) {
    State init = std::move(states_[static_cast<size_t>(initial_)]);
    State kept;
    bool keep_alive = keep >= 0 && keep != initial_;
    if (keep_alive) kept = std::move(states_[static_cast<size_t>(keep)]);
    states_.clear();
    next_.clear();
    index_.clear();
    ++generation_;
    StateId new_initial = intern(std::move(init.stacks), init.partial_value, init.partial_left, init.partial_len);
    StateId new_keep = keep == initial_ ? new_initial : kDeadState;
    if (keep_alive) new_keep = intern(std::move(kept.stacks), kept.partial_value, kept.partial_left, kept.partial_len);
    initial_ = new_initial;
    return new_keep;
}

bool matches(const Grammar& grammar, std::string_view text) {
    Automaton automaton(std::make_shared<const Grammar>(grammar));
    StateId s = automaton.step(automaton.initial(), text);
    return s != kDeadState && automaton.can_end(s);
}

}  // namespace cria::grammar
