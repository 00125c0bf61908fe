#pragma once
// GBNF grammars: the text form llama.cpp accepts, parsed into flat rules.
//
// A grammar is a list of rules; each rule is a list of alternatives laid out
// one after another, every alternative ended by Alt (more follow) or End (the
// last one). Inside an alternative, a character class is one Char / CharNot
// element followed by CharAlt (one more code point) and CharRangeUpper (turns
// the code point before it into a range) elements. Repetitions (* + ? {m,n})
// and groups are rewritten into generated rules, as llama.cpp does, so the
// matcher only ever sees sequences, alternatives and rule references.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cria::grammar {

enum class ElementType : uint8_t {
    End,             // end of the rule's last alternative
    Alt,             // end of an alternative, another follows
    RuleRef,         // value: rule index
    Char,            // value: code point; starts a positive class
    CharNot,         // value: code point; starts a negated class ([^...])
    CharRangeUpper,  // value: upper bound of a range whose lower bound is the element before
    CharAlt,         // value: another code point of the same class
    CharAny,         // "." : any code point
    Token,           // value: token id, matches exactly that token (<[id]> or <text>)
    TokenNot,        // value: token id, matches any single token but that one (!<[id]>)
};

struct Element {
    ElementType type = ElementType::End;
    uint32_t value = 0;
    bool operator==(const Element&) const = default;
};

// Resolves a token reference written as <text> to its token id; returns a
// negative number when the text is not exactly one token.
using TokenResolver = std::function<int32_t(std::string_view text)>;

struct Grammar {
    std::vector<std::vector<Element>> rules;
    std::vector<std::string> rule_names;  // index = rule id
    uint32_t root = 0;

    // Rule id of `name`, or -1.
    int64_t find_rule(std::string_view name) const;
    // The grammar back in GBNF (generated rules included); parses to the same rules.
    std::string to_gbnf() const;
};

// Parses GBNF text. Throws cria::Error with "line L, column C" on syntax
// errors, undefined rules, left recursion and a missing root rule.
// `<text>` token references need `resolve` (they depend on a vocabulary).
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root", const TokenResolver& resolve = nullptr);

// True when a class element (Char/CharNot/CharAny at `pos`) accepts code
// point `cp`. `after` receives the element just past the class.
bool class_matches(const Element* pos, uint32_t cp, const Element** after = nullptr);

}  // namespace cria::grammar
