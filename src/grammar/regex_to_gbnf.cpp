// The regex subset JSON Schema "pattern"s use, as GBNF over the string's
// characters: literals, escapes (\d \w \s and their negations, escaped
// punctuation), ".", classes, groups ((...), (?:...)), "|", and the
// quantifiers * + ? {m} {m,} {m,n} (lazy "?" suffix accepted). "^" and "$"
// anchor at the ends; a pattern without them may have anything around it,
// as JSON Schema searches patterns rather than matching them whole.

#include <string>

#include "cria/core/error.h"
#include "grammar/schema_converter.h"
#include "grammar/utf8.h"

namespace cria::grammar {
namespace {

class RegexTranslator {
public:
    RegexTranslator(const std::string& pattern, const std::string& char_rule) : p_(pattern), char_rule_(char_rule) {}

    std::string run() {
        bool anchored_start = !p_.empty() && p_[0] == '^';
        if (anchored_start) pos_ = 1;
        std::string body = alternation();
        bool anchored_end = false;
        if (pos_ < p_.size() && p_[pos_] == '$') { anchored_end = true; ++pos_; }
        if (pos_ != p_.size()) fail("unexpected '" + std::string(1, p_[pos_]) + "'");
        std::string out;
        if (!anchored_start) out += char_rule_ + "* ";
        out += "(" + body + ")";
        if (!anchored_end) out += " " + char_rule_ + "*";
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("json schema: pattern '" + p_ + "' at offset " + std::to_string(pos_) + ": " + what);
    }
    bool more() const { return pos_ < p_.size(); }

    std::string alternation() {
        if (++depth_ > 200) fail("nesting too deep");
        std::string out = sequence();
        while (more() && p_[pos_] == '|') {
            ++pos_;
            out += " | " + sequence();
        }
        --depth_;
        return out;
    }

    std::string sequence() {
        std::string out;
        while (more() && p_[pos_] != '|' && p_[pos_] != ')') {
            if (p_[pos_] == '$' && pos_ + 1 == p_.size()) break;
            std::string a = atom();
            a += quantifier();
            out += (out.empty() ? "" : " ") + a;
        }
        return out.empty() ? "\"\"" : out;
    }

    std::string quantifier() {
        if (!more()) return "";
        char c = p_[pos_];
        std::string q;
        if (c == '*' || c == '+' || c == '?') {
            q = std::string(1, c);
            ++pos_;
        } else if (c == '{') {
            size_t close = p_.find('}', pos_);
            if (close == std::string::npos) fail("unterminated {");
            std::string inner = p_.substr(pos_ + 1, close - pos_ - 1);
            for (char d : inner) if (!(d >= '0' && d <= '9') && d != ',') fail("bad repetition {" + inner + "}");
            if (inner.empty() || inner[0] == ',') fail("bad repetition {" + inner + "}");
            q = "{" + inner + "}";
            pos_ = close + 1;
        } else {
            return "";
        }
        if (more() && p_[pos_] == '?') ++pos_;  // lazy: same language
        if (more() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '{')) fail("nested quantifier");
        return q;
    }

    // A literal character as grammar text matching its JSON-escaped form.
    static std::string literal_char(uint32_t cp) {
        if (cp == '"') return "\"\\\\\\\"\"";   // JSON escape of the char
        if (cp == '\\') return "\"\\\\\\\\\"";  // JSON escape of the char
        std::string s;
        utf8::append(s, cp);
        return SchemaConverter::literal(s);
    }

    std::string atom() {
        char c = p_[pos_];
        if (c == '(') {
            ++pos_;
            if (p_.compare(pos_, 2, "?:") == 0) pos_ += 2;
            else if (more() && p_[pos_] == '?') fail("lookaround and named groups are not supported");
            std::string inner = alternation();
            if (!more() || p_[pos_] != ')') fail("missing ')'");
            ++pos_;
            return std::string("(") + inner + ")";
        }
        if (c == '[') return char_class();
        if (c == '.') { ++pos_; return char_rule_; }
        if (c == '\\') return escape(false);
        if (c == '^' || c == '$') fail("anchors are supported only at the ends");
        if (c == '*' || c == '+' || c == '?' || c == '{') fail("quantifier with nothing before it");
        size_t start = pos_;
        uint32_t cp = 0;
        if (!utf8::decode_one(p_, pos_, cp)) { pos_ = start; fail("invalid UTF-8"); }
        return literal_char(cp);
    }

    // Escape outside ([in_class] = false: a whole atom) or inside a class (class text).
    std::string escape(bool in_class) {
        ++pos_;
        if (!more()) fail("dangling backslash");
        char e = p_[pos_++];
        switch (e) {
            case 'd': return in_class ? "0-9" : "[0-9]";
            case 'w': return in_class ? "a-zA-Z0-9_" : "[a-zA-Z0-9_]";
            case 's': return in_class ? " \\t\\n\\r" : "[ \\t\\n\\r]";
            case 'D': if (!in_class) return "[^0-9\"\\\\\\x00-\\x1F]"; break;
            case 'W': if (!in_class) return "[^a-zA-Z0-9_\"\\\\\\x00-\\x1F]"; break;
            case 'S': if (!in_class) return "[^ \\t\\n\\r\"\\\\\\x00-\\x1F]"; break;
            case 'n': return in_class ? "\\n" : "\"\\n\"";
            case 't': return in_class ? "\\t" : "\"\\t\"";
            case 'r': return in_class ? "\\r" : "\"\\r\"";
            default: break;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
            --pos_;
            fail(std::string("unsupported escape \\") + e);
        }
        if (in_class) return class_char(static_cast<uint8_t>(e));
        return literal_char(static_cast<uint8_t>(e));
    }

    static std::string class_char(uint32_t cp) {
        std::string s;
        if (cp == '^') return "\\x5E";  // GBNF has no \^ escape; a leading ^ would negate
        if (cp == ']' || cp == '[' || cp == '\\' || cp == '-' || cp == '"') s.push_back('\\');
        utf8::append(s, cp);
        return s;
    }

    std::string class_item() {
        if (p_[pos_] == '\\') return escape(true);
        size_t start = pos_;
        uint32_t cp = 0;
        if (!utf8::decode_one(p_, pos_, cp)) { pos_ = start; fail("invalid UTF-8"); }
        return class_char(cp);
    }

    std::string char_class() {
        ++pos_;
        std::string out = "[";
        if (more() && p_[pos_] == '^') { out += "^\"\\\\\\x00-\\x1F"; ++pos_; }
        bool first = true;
        while (more() && (p_[pos_] != ']' || first)) {
            first = false;
            std::string item = class_item();
            if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
                ++pos_;
                item += '-';
                item += class_item();
            }
            out += item;
        }
        if (!more()) fail("unterminated character class");
        ++pos_;
        return out + "]";
    }

    const std::string& p_;
    const std::string& char_rule_;
    size_t pos_ = 0;
    int depth_ = 0;
};

}  // namespace

std::string regex_to_gbnf(const std::string& pattern, const std::string& char_rule) {
    return RegexTranslator(pattern, char_rule).run();
}

}  // namespace cria::grammar
