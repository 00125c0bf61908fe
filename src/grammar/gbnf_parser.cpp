// GBNF text -> Grammar. Follows the syntax of llama.cpp's grammar parser
// (see grammars/README.md there): rules `name ::= alternatives`, literals,
// classes, `.`, groups, repetitions, comments, token references.

#include <map>

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "grammar/utf8.h"

namespace cria::grammar {
namespace {

class Parser {
public:
    Parser(std::string_view text, const TokenResolver& resolve) : src_(text), resolve_(resolve) {}

    Grammar run(std::string_view root_rule) {
        size_t pos = skip_space(0, true);
        while (pos < src_.size()) pos = parse_rule(pos);
        for (size_t id = 0; id < grammar_.rules.size(); ++id) {
            if (!defined_[id]) fail(first_use_[id], "undefined rule '" + grammar_.rule_names[id] + "'");
        }
        int64_t root = grammar_.find_rule(root_rule);
        if (root < 0) throw Error("grammar: no rule named '" + std::string(root_rule) + "' (the start rule)");
        grammar_.root = static_cast<uint32_t>(root);
        return std::move(grammar_);
    }

private:
    [[noreturn]] void fail(size_t pos, const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < pos && i < src_.size(); ++i) {
            if (src_[i] == '\n') { ++line; col = 1; } else { ++col; }
        }
        throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
    }

    char at(size_t pos) const { return pos < src_.size() ? src_[pos] : '\0'; }
    static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }

    // Skips blanks and comments; newlines only where `newline_ok`.
    size_t skip_space(size_t pos, bool newline_ok) const {
        while (pos < src_.size()) {
            char c = src_[pos];
            if (c == ' ' || c == '\t' || c == '#' || (newline_ok && (c == '\r' || c == '\n'))) {
                if (c == '#') {
                    while (pos < src_.size() && src_[pos] != '\r' && src_[pos] != '\n') ++pos;
                } else {
                    ++pos;
                }
            } else {
                break;
            }
        }
        return pos;
    }

    size_t parse_name(size_t pos) const {
        size_t end = pos;
        while (end < src_.size() && is_word_char(src_[end])) ++end;
        if (end == pos) fail(pos, "expecting a rule name");
        return end;
    }

    uint32_t rule_id(std::string_view name, size_t use_pos) {
        auto it = ids_.find(std::string(name));
        if (it != ids_.end()) return it->second;
        uint32_t id = static_cast<uint32_t>(grammar_.rules.size());
        ids_.emplace(std::string(name), id);
        grammar_.rules.emplace_back();
        grammar_.rule_names.emplace_back(name);
        defined_.push_back(false);
        first_use_.push_back(use_pos);
        return id;
    }

    uint32_t generated_rule(const std::string& base) {
        for (int n = static_cast<int>(ids_.size());; ++n) {
            std::string name = base + "-" + std::to_string(n);
            if (!ids_.count(name)) {
                uint32_t id = rule_id(name, 0);
                defined_[id] = true;
                return id;
            }
        }
    }

    // One (possibly escaped) character of a literal or class; returns the code point.
    uint32_t parse_char(size_t& pos) {
        if (pos >= src_.size()) fail(pos, "unexpected end of input");
        if (src_[pos] == '\\') {
            size_t start = pos;
            char e = at(pos + 1);
            pos += 2;
            switch (e) {
                case 'x': return parse_hex(pos, 2, start);
                case 'u': return parse_hex(pos, 4, start);
                case 'U': return parse_hex(pos, 8, start);
                case 't': return '\t';
                case 'r': return '\r';
                case 'n': return '\n';
                case '\\': case '"': case '[': case ']': case '-': return static_cast<uint8_t>(e);
                default: fail(start, std::string("unknown escape '\\") + (e ? std::string(1, e) : "") + "'");
            }
        }
        size_t start = pos;
        uint32_t cp = 0;
        if (!utf8::decode_one(src_, pos, cp)) fail(start, "invalid UTF-8");
        return cp;
    }

    uint32_t parse_hex(size_t& pos, int digits, size_t start) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i, ++pos) {
            char c = at(pos);
            int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) fail(start, "expecting " + std::to_string(digits) + " hex digits");
            v = v * 16 + static_cast<uint32_t>(d);
        }
        if (v > 0x10FFFF) fail(start, "code point above U+10FFFF");
        return v;
    }

    uint64_t parse_int(size_t& pos) {
        size_t start = pos;
        uint64_t v = 0;
        while (pos < src_.size() && src_[pos] >= '0' && src_[pos] <= '9') {
            v = v * 10 + static_cast<uint64_t>(src_[pos] - '0');
            if (v > kMaxRepeat) fail(start, "repetition count too large (max " + std::to_string(kMaxRepeat) + ")");
            ++pos;
        }
        if (pos == start) fail(start, "expecting a number");
        return v;
    }

    size_t parse_rule(size_t pos) {
        size_t name_end = parse_name(pos);
        std::string_view name = src_.substr(pos, name_end - pos);
        uint32_t id = rule_id(name, pos);
        if (defined_[id]) fail(pos, "rule '" + std::string(name) + "' is defined twice");
        defined_[id] = true;
        pos = skip_space(name_end, false);
        if (src_.substr(pos, 3) != "::=") fail(pos, "expecting ::=");
        pos = skip_space(pos + 3, true);
        std::vector<Element> body;
        pos = parse_alternates(pos, std::string(name), body, false);
        grammar_.rules[id] = std::move(body);
        if (at(pos) == '\r') pos += at(pos + 1) == '\n' ? 2 : 1;
        else if (at(pos) == '\n') ++pos;
        else if (pos < src_.size()) fail(pos, "expecting newline or end of input");
        return skip_space(pos, true);
    }

    size_t parse_alternates(size_t pos, const std::string& name, std::vector<Element>& out, bool nested) {
        pos = parse_sequence(pos, name, out, nested);
        while (at(pos) == '|') {
            out.push_back({ElementType::Alt, 0});
            pos = skip_space(pos + 1, true);
            pos = parse_sequence(pos, name, out, nested);
        }
        out.push_back({ElementType::End, 0});
        return pos;
    }

    // A sequence of terms. `out` receives them; repetition operators rewrite
    // the last term, which starts at `last_start`.
    size_t parse_sequence(size_t pos, const std::string& name, std::vector<Element>& out, bool nested) {
        size_t last_start = out.size();
        bool have_last = false;
        if (++depth_ > kMaxDepth) fail(pos, "nesting too deep");
        while (pos < src_.size()) {
            char c = src_[pos];
            if (c == '"') {
                ++pos;
                last_start = out.size();
                while (at(pos) != '"') {
                    if (pos >= src_.size()) fail(pos, "unexpected end of input in a string");
                    out.push_back({ElementType::Char, parse_char(pos)});
                }
                have_last = true;
                pos = skip_space(pos + 1, nested);
            } else if (c == '[') {
                size_t start = pos++;
                last_start = out.size();
                ElementType first = ElementType::Char;
                if (at(pos) == '^') { ++pos; first = ElementType::CharNot; }
                size_t class_start = out.size();
                while (at(pos) != ']') {
                    if (pos >= src_.size()) fail(start, "unexpected end of input in a character class");
                    uint32_t lo = parse_char(pos);
                    out.push_back({out.size() == class_start ? first : ElementType::CharAlt, lo});
                    if (at(pos) == '-' && at(pos + 1) != ']') {
                        ++pos;
                        if (pos >= src_.size()) fail(start, "unexpected end of input in a character class");
                        uint32_t hi = parse_char(pos);
                        out.push_back({ElementType::CharRangeUpper, hi});
                    }
                }
                if (out.size() == class_start) {
                    // [^] excludes nothing: any char. [] would match nothing at all.
                    if (first == ElementType::Char) fail(start, "empty character class");
                    out.push_back({ElementType::CharAny, 0});
                }
                have_last = true;
                pos = skip_space(pos + 1, nested);
            } else if (c == '.') {
                last_start = out.size();
                out.push_back({ElementType::CharAny, 0});
                have_last = true;
                pos = skip_space(pos + 1, nested);
            } else if (c == '<' || (c == '!' && at(pos + 1) == '<')) {
                size_t start = pos;
                bool negated = c == '!';
                pos += negated ? 2 : 1;
                size_t close = src_.find('>', pos);
                if (close == std::string_view::npos) fail(start, "unterminated token reference");
                std::string_view inner = src_.substr(pos, close - pos);
                int64_t token = -1;
                if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']') {
                    size_t p = pos + 1;
                    uint64_t v = parse_int(p);
                    if (p != close - 1) fail(start, "expecting <[number]>");
                    token = static_cast<int64_t>(v);
                } else {
                    if (!resolve_) fail(start, "token reference <" + std::string(inner) + "> needs a vocabulary");
                    token = resolve_(std::string_view(src_.data() + start + (negated ? 1 : 0), close - start + 1 - (negated ? 1 : 0)));
                    if (token < 0) fail(start, "<" + std::string(inner) + "> is not a single token of the vocabulary");
                }
                last_start = out.size();
                out.push_back({negated ? ElementType::TokenNot : ElementType::Token, static_cast<uint32_t>(token)});
                have_last = true;
                pos = skip_space(close + 1, nested);
            } else if (is_word_char(c)) {
                size_t end = parse_name(pos);
                uint32_t ref = rule_id(src_.substr(pos, end - pos), pos);
                last_start = out.size();
                out.push_back({ElementType::RuleRef, ref});
                have_last = true;
                pos = skip_space(end, nested);
            } else if (c == '(') {
                pos = skip_space(pos + 1, true);
                uint32_t sub = generated_rule(name);
                std::vector<Element> body;
                pos = parse_alternates(pos, name, body, true);
                grammar_.rules[sub] = std::move(body);
                last_start = out.size();
                out.push_back({ElementType::RuleRef, sub});
                have_last = true;
                if (at(pos) != ')') fail(pos, "expecting ')'");
                pos = skip_space(pos + 1, nested);
            } else if (c == '*' || c == '+' || c == '?') {
                if (!have_last) fail(pos, std::string("'") + c + "' with nothing before it");
                uint64_t max = c == '?' ? 1 : kUnbounded;
                repeat(name, out, last_start, c == '+' ? 1 : 0, max);
                pos = skip_space(pos + 1, nested);
            } else if (c == '{') {
                if (!have_last) fail(pos, "'{' with nothing before it");
                size_t start = pos;
                pos = skip_space(pos + 1, nested);
                uint64_t min = parse_int(pos), max = min;
                pos = skip_space(pos, nested);
                if (at(pos) == ',') {
                    pos = skip_space(pos + 1, nested);
                    if (at(pos) == '}') max = kUnbounded;
                    else { max = parse_int(pos); pos = skip_space(pos, nested); }
                }
                if (at(pos) != '}') fail(pos, "expecting '}'");
                if (max < min) fail(start, "repetition {m,n} with n < m");
                repeat(name, out, last_start, min, max);
                pos = skip_space(pos + 1, nested);
            } else {
                break;
            }
        }
        --depth_;
        return pos;
    }

    // Rewrites out[last_start..] (one term) into `min` copies followed by
    // optional ones (max-min of them, or a recursive rule when unbounded):
    //   x{2,4} -> x x (x (x)?)?      x{1,} -> x x*      x* -> r ::= x r |
    void repeat(const std::string& name, std::vector<Element>& out, size_t last_start, uint64_t min, uint64_t max) {
        std::vector<Element> term(out.begin() + static_cast<std::ptrdiff_t>(last_start), out.end());
        out.resize(last_start);
        // The term is the whole last item: a whole string literal ("ab"* repeats
        // "ab", as in llama.cpp), a whole class, one rule reference or group.
        uint64_t copies = min;
        for (uint64_t i = 0; i < copies; ++i) out.insert(out.end(), term.begin(), term.end());
        if (out.size() > kMaxElements) throw Error("grammar: repetitions expand beyond " + std::to_string(kMaxElements) + " elements");
        if (max == min) return;
        if (max == kUnbounded) {
            uint32_t rec = generated_rule(name);
            std::vector<Element> body = term;
            body.push_back({ElementType::RuleRef, rec});
            body.push_back({ElementType::Alt, 0});
            body.push_back({ElementType::End, 0});
            grammar_.rules[rec] = std::move(body);
            out.push_back({ElementType::RuleRef, rec});
            return;
        }
        // Nested optionals: opt_k ::= term opt_{k-1} |  (innermost: term |)
        uint32_t inner = 0;
        bool have_inner = false;
        for (uint64_t k = 0; k < max - min; ++k) {
            uint32_t opt = generated_rule(name);
            std::vector<Element> body = term;
            if (have_inner) body.push_back({ElementType::RuleRef, inner});
            body.push_back({ElementType::Alt, 0});
            body.push_back({ElementType::End, 0});
            grammar_.rules[opt] = std::move(body);
            inner = opt;
            have_inner = true;
            if (grammar_.rules.size() > kMaxElements) throw Error("grammar: repetitions expand beyond " + std::to_string(kMaxElements) + " rules");
        }
        out.push_back({ElementType::RuleRef, inner});
    }

    static constexpr uint64_t kUnbounded = ~uint64_t{0};
    static constexpr uint64_t kMaxRepeat = 100000;
    static constexpr size_t kMaxElements = 1u << 22;
    static constexpr int kMaxDepth = 512;

    std::string_view src_;
    const TokenResolver& resolve_;
    Grammar grammar_;
    std::map<std::string, uint32_t, std::less<>> ids_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
    int depth_ = 0;
};

}  // namespace

void check_left_recursion(const Grammar& grammar);

Grammar parse_gbnf(std::string_view text, std::string_view root_rule, const TokenResolver& resolve) {
    Grammar g = Parser(text, resolve).run(root_rule);
    check_left_recursion(g);
    return g;
}

int64_t Grammar::find_rule(std::string_view name) const {
    for (size_t i = 0; i < rule_names.size(); ++i) {
        if (rule_names[i] == name) return static_cast<int64_t>(i);
    }
    return -1;
}

}  // namespace cria::grammar
