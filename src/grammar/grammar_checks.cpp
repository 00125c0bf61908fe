// Whole-grammar facts: left recursion, class matching, printing back to GBNF.

#include <cstdio>

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "grammar/utf8.h"

namespace cria::grammar {
namespace {

bool is_class_continuation(ElementType t) { return t == ElementType::CharAlt || t == ElementType::CharRangeUpper; }
bool is_alt_end(ElementType t) { return t == ElementType::End || t == ElementType::Alt; }

// Rules that can match the empty string (fixed point over all rules).
std::vector<bool> nullable_rules(const Grammar& g) {
    std::vector<bool> nullable(g.rules.size(), false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < g.rules.size(); ++r) {
            if (nullable[r]) continue;
            bool alt_ok = true;
            for (const Element& e : g.rules[r]) {
                if (is_alt_end(e.type)) {
                    if (alt_ok) { nullable[r] = true; changed = true; break; }
                    alt_ok = true;
                } else if (e.type == ElementType::RuleRef) {
                    if (!nullable[e.value]) alt_ok = false;
                } else if (!is_class_continuation(e.type)) {
                    alt_ok = false;
                }
            }
        }
    }
    return nullable;
}

}  // namespace

// Left recursion (a rule reaching itself before consuming anything) would
// make the matcher expand forever, so it is rejected up front, as llama.cpp does.
void check_left_recursion(const Grammar& g) {
    const size_t n = g.rules.size();
    std::vector<bool> nullable = nullable_rules(g);
    // leftmost[r]: rules referenced at a position reachable without consuming input.
    std::vector<std::vector<uint32_t>> leftmost(n);
    for (size_t r = 0; r < n; ++r) {
        bool at_left = true;
        for (const Element& e : g.rules[r]) {
            if (is_alt_end(e.type)) { at_left = true; continue; }
            if (!at_left) continue;
            if (e.type == ElementType::RuleRef) {
                leftmost[r].push_back(e.value);
                at_left = nullable[e.value];
            } else if (!is_class_continuation(e.type)) {
                at_left = false;
            }
        }
    }
    // Iterative DFS with colours: 0 new, 1 on the path, 2 done.
    std::vector<uint8_t> colour(n, 0);
    for (size_t start = 0; start < n; ++start) {
        if (colour[start]) continue;
        std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(start), 0}};
        colour[start] = 1;
        while (!path.empty()) {
            auto& [r, i] = path.back();
            if (i < leftmost[r].size()) {
                uint32_t next = leftmost[r][i++];
                if (colour[next] == 1) throw Error("grammar: left recursion in rule '" + g.rule_names[next] + "'");
                if (colour[next] == 0) { colour[next] = 1; path.push_back({next, 0}); }
            } else {
                colour[r] = 2;
                path.pop_back();
            }
        }
    }
}

bool class_matches(const Element* pos, uint32_t cp, const Element** after) {
    bool positive = pos->type != ElementType::CharNot;
    bool found = false;
    if (pos->type == ElementType::CharAny) {
        if (after) *after = pos + 1;
        return true;
    }
    do {
        if (pos[1].type == ElementType::CharRangeUpper) {
            found = found || (pos->value <= cp && cp <= pos[1].value);
            pos += 2;
        } else {
            found = found || pos->value == cp;
            pos += 1;
        }
    } while (pos->type == ElementType::CharAlt);
    if (after) *after = pos;
    return found == positive;
}

namespace {

void print_char(std::string& out, uint32_t cp, bool in_class) {
    if (in_class && cp == '^') {
        out += "\\x5E";  // a leading ^ would negate the class
    } else if (cp == '\\' || cp == '"' || (in_class && (cp == ']' || cp == '-' || cp == '['))) {
        out += '\\';
        out += static_cast<char>(cp);
    } else if (cp == '\n') {
        out += "\\n";
    } else if (cp == '\r') {
        out += "\\r";
    } else if (cp == '\t') {
        out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0xD800 && cp <= 0xDFFF)) {
        char buf[16];
        std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02X" : "\\u%04X", cp);
        out += buf;
    } else {
        utf8::append(out, cp);
    }
}

}  // namespace

std::string Grammar::to_gbnf() const {
    std::string out;
    for (size_t r = 0; r < rules.size(); ++r) {
        out += rule_names[r] + " ::=";
        const auto& body = rules[r];
        bool alt_empty = true;  // an empty alternative prints as "" so a line break cannot join the next rule
        for (size_t i = 0; i < body.size(); ++i) {
            const Element& e = body[i];
            if (is_alt_end(e.type) && alt_empty) out += " \"\"";
            alt_empty = is_alt_end(e.type);
            switch (e.type) {
                case ElementType::End: break;
                case ElementType::Alt: out += " |"; break;
                case ElementType::RuleRef: out += " " + rule_names[e.value]; break;
                case ElementType::CharAny: out += " ."; break;
                case ElementType::Token: out += " <[" + std::to_string(e.value) + "]>"; break;
                case ElementType::TokenNot: out += " !<[" + std::to_string(e.value) + "]>"; break;
                case ElementType::Char:
                case ElementType::CharNot:
                    out += e.type == ElementType::CharNot ? " [^" : " [";
                    print_char(out, e.value, true);
                    while (i + 1 < body.size() && is_class_continuation(body[i + 1].type)) {
                        ++i;
                        if (body[i].type == ElementType::CharRangeUpper) out += '-';
                        print_char(out, body[i].value, true);
                    }
                    out += ']';
                    break;
                case ElementType::CharAlt:
                case ElementType::CharRangeUpper: break;  // consumed above
            }
        }
        out += '\n';
    }
    return out;
}

}  // namespace cria::grammar
