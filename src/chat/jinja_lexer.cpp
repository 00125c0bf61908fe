// Jinja2's lexer, rewritten: see jinja_lexer.h for what it promises.

#include "jinja_lexer.h"

#include <cstring>

#include "cria/chat/jinja_value.h"

namespace cria::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string rstrip(const std::string& s) {
    size_t n = s.size();
    while (n > 0 && is_space(s[n - 1])) --n;
    return s.substr(0, n);
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

class Lexer {
public:
    Lexer(const std::string& source, const LexerOptions& options) : src_(source), opt_(options) {
        if (!opt_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') {
            src_.pop_back();
            if (!src_.empty() && src_.back() == '\r') src_.pop_back();
        }
        normalize_newlines();
    }

    std::vector<Token> run() {
        size_t pos = 0;
        while (pos < src_.size()) {
            const size_t start = find_tag_start(pos);
            std::string text = src_.substr(pos, (start == std::string::npos ? src_.size() : start) - pos);
            if (start == std::string::npos) {
                emit_text(text, pos);
                break;
            }
            const char kind = src_[start + 1];  // '{', '%' or '#'
            const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
            if (sign == '-') {
                text = rstrip(text);
            } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
                const size_t nl = text.rfind('\n');
                const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
                const bool line_starting = pos == 0 || src_[pos - 1] == '\n';
                if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
                    bool all_space = true;
                    for (size_t i = l_pos; i < text.size(); ++i) all_space = all_space && is_space(text[i]);
                    if (all_space) text.resize(l_pos);
                }
            }
            emit_text(text, pos);
            size_t p = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
            if (kind == '#') pos = lex_comment(start, p);
            else if (kind == '%' && is_raw_begin(p)) pos = lex_raw(p);
            else pos = lex_tag(kind, start, p);
        }
        tokens_.push_back(Token{TokenType::End, "", line_at(src_.size()), 0});
        return std::move(tokens_);
    }

private:
    // Python's str.splitlines() joins with '\n', so "\r\n" and "\r" become "\n".
    void normalize_newlines() {
        if (src_.find('\r') == std::string::npos) return;
        std::string out;
        out.reserve(src_.size());
        for (size_t i = 0; i < src_.size(); ++i) {
            if (src_[i] == '\r') {
                out += '\n';
                if (i + 1 < src_.size() && src_[i + 1] == '\n') ++i;
            } else out += src_[i];
        }
        src_ = std::move(out);
    }

    size_t find_tag_start(size_t pos) const {
        for (size_t i = pos; i + 1 < src_.size(); ++i)
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return std::string::npos;
    }

    int line_at(size_t pos) {
        // Lines are counted incrementally: positions only move forward.
        while (line_pos_ < pos && line_pos_ < src_.size()) {
            if (src_[line_pos_] == '\n') {
                ++line_;
                line_start_ = line_pos_ + 1;
            }
            ++line_pos_;
        }
        return line_;
    }
    int column_at(size_t pos) {
        line_at(pos);
        return static_cast<int>(pos - line_start_) + 1;
    }

    [[noreturn]] void fail(const std::string& message, size_t pos) {
        const int line = line_at(pos);
        throw TemplateError("TemplateSyntaxError", message, line, column_at(pos));
    }

    void emit_text(const std::string& text, size_t pos) {
        if (!text.empty()) tokens_.push_back(Token{TokenType::Text, text, line_at(pos), column_at(pos)});
    }

    // After a block tag's '%}': trim_blocks removes one newline.
    size_t after_block_end(size_t p) const {
        if (opt_.trim_blocks && p < src_.size() && src_[p] == '\n') return p + 1;
        return p;
    }
    size_t skip_space(size_t p) const {
        while (p < src_.size() && is_space(src_[p])) ++p;
        return p;
    }

    size_t lex_comment(size_t start, size_t p) {
        const size_t end = src_.find("#}", p);
        if (end == std::string::npos) fail("Missing end of comment tag", start);
        if (end > p && src_[end - 1] == '-') return skip_space(end + 2);
        return after_block_end(end + 2);
    }

    // `{% raw %}` with optional whitespace control, read after "{%" and the sign.
    bool is_raw_begin(size_t p) const {
        p = skip_space(p);
        if (src_.compare(p, 3, "raw") != 0) return false;
        p = skip_space(p + 3);
        if (p < src_.size() && src_[p] == '-') ++p;
        return src_.compare(p, 2, "%}") == 0;
    }

    size_t lex_raw(size_t p) {
        p = skip_space(p);
        p = skip_space(p + 3);
        if (src_[p] == '-') p = skip_space(p + 3);
        else p += 2;
        // Find "{%[-+]? endraw [-+]?%}".
        size_t search = p;
        while (true) {
            const size_t tag = src_.find("{%", search);
            if (tag == std::string::npos) fail("Missing end of raw directive", p);
            size_t q = tag + 2;
            const char sign = q < src_.size() ? src_[q] : '\0';
            if (sign == '-' || sign == '+') ++q;
            q = skip_space(q);
            if (src_.compare(q, 6, "endraw") != 0) {
                search = tag + 2;
                continue;
            }
            q = skip_space(q + 6);
            char end_sign = '\0';
            if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
            if (src_.compare(q, 2, "%}") != 0) fail("Missing end of raw directive", tag);
            std::string text = src_.substr(p, tag - p);
            if (sign == '-') text = rstrip(text);
            else if (sign != '+' && opt_.lstrip_blocks) {
                const size_t nl = text.rfind('\n');
                const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
                if (l_pos > 0 || p == 0 || src_[p - 1] == '\n') {
                    bool all_space = l_pos < text.size();
                    for (size_t i = l_pos; i < text.size(); ++i) all_space = all_space && is_space(text[i]);
                    if (all_space) text.resize(l_pos);
                }
            }
            emit_text(text, p);
            q += 2;
            if (end_sign == '-') return skip_space(q);
            if (end_sign == '+') return q;
            return after_block_end(q);
        }
    }

    size_t lex_tag(char kind, size_t start, size_t p) {
        const bool block = kind == '%';
        tokens_.push_back(Token{block ? TokenType::BlockBegin : TokenType::VariableBegin, "", line_at(start), column_at(start)});
        int depth = 0;  // brackets open: "}}" inside a dict literal is not the end
        while (true) {
            p = skip_space(p);
            if (p >= src_.size()) fail(std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") + "'", start);
            // The end of the tag is checked before any operator, as Jinja2 does.
            if (depth > 0) {
                // Inside brackets the end delimiter reads as operators (Jinja2's balancing rule).
            } else if (block) {
                if (src_.compare(p, 3, "-%}") == 0) {
                    tokens_.push_back(Token{TokenType::BlockEnd, "", line_at(p), column_at(p)});
                    return skip_space(p + 3);
                }
                if (src_.compare(p, 3, "+%}") == 0) {
                    tokens_.push_back(Token{TokenType::BlockEnd, "", line_at(p), column_at(p)});
                    return p + 3;
                }
                if (src_.compare(p, 2, "%}") == 0) {
                    tokens_.push_back(Token{TokenType::BlockEnd, "", line_at(p), column_at(p)});
                    return after_block_end(p + 2);
                }
            } else {
                if (src_.compare(p, 3, "-}}") == 0) {
                    tokens_.push_back(Token{TokenType::VariableEnd, "", line_at(p), column_at(p)});
                    return skip_space(p + 3);
                }
                if (src_.compare(p, 2, "}}") == 0) {
                    tokens_.push_back(Token{TokenType::VariableEnd, "", line_at(p), column_at(p)});
                    return p + 2;
                }
            }
            p = lex_token(p, depth);
        }
    }

    size_t lex_token(size_t p, int& depth) {
        const char c = src_[p];
        const int line = line_at(p), col = column_at(p);
        if (is_name_start(c)) {
            size_t q = p + 1;
            while (q < src_.size() && (is_name_start(src_[q]) || is_digit(src_[q]))) ++q;
            tokens_.push_back(Token{TokenType::Name, src_.substr(p, q - p), line, col});
            return q;
        }
        if (is_digit(c)) return lex_number(p, line, col);
        if (c == '\'' || c == '"') return lex_string(p, line, col);
        static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%", "~", "[", "]",
                                          "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"};
        for (const char* op : ops) {
            const size_t n = std::strlen(op);
            if (src_.compare(p, n, op) == 0) {
                if (n == 1 && (c == '(' || c == '[' || c == '{')) ++depth;
                if (n == 1 && (c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                tokens_.push_back(Token{TokenType::Operator, op, line, col});
                return p + n;
            }
        }
        fail(std::string("unexpected char '") + c + "' at " + std::to_string(p), p);
    }

    size_t lex_number(size_t p, int line, int col) {
        size_t q = p;
        auto digits = [&]() {
            while (q < src_.size() && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1])))) ++q;
        };
        digits();
        bool is_float = false;
        if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
            ++q;
            digits();
            is_float = true;
        }
        if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
            size_t r = q + 1;
            if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
            if (r < src_.size() && is_digit(src_[r])) {
                q = r;
                digits();
                is_float = true;
            }
        }
        std::string text;
        for (size_t i = p; i < q; ++i)
            if (src_[i] != '_') text += src_[i];
        tokens_.push_back(Token{is_float ? TokenType::Float : TokenType::Integer, text, line, col});
        return q;
    }

    size_t lex_string(size_t p, int line, int col) {
        const char quote = src_[p];
        std::string out;
        size_t q = p + 1;
        while (true) {
            if (q >= src_.size()) fail("unexpected end of string", p);
            const char c = src_[q];
            if (c == quote) break;
            if (c != '\\') {
                out += c;
                ++q;
                continue;
            }
            if (q + 1 >= src_.size()) fail("unexpected end of string", p);
            const char e = src_[q + 1];
            q += 2;
            auto hex = [&](int n) -> uint32_t {
                uint32_t v = 0;
                for (int k = 0; k < n; ++k) {
                    if (q >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[q])))
                        fail("truncated \\x, \\u or \\U escape in string", p);
                    const char h = src_[q++];
                    v = v * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                return v;
            };
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'v': out += '\v'; break;
                case '\n': break;  // line continuation
                case 'x': append_utf8(out, hex(2)); break;
                case 'u': append_utf8(out, hex(4)); break;
                case 'U': {
                    const uint32_t cp = hex(8);
                    if (cp > 0x10ffff) fail("illegal Unicode character in string", p);
                    append_utf8(out, cp);
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t v = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7'; ++k)
                            v = v * 8 + static_cast<uint32_t>(src_[q++] - '0');
                        append_utf8(out, v);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        tokens_.push_back(Token{TokenType::String, out, line, col});
        return q + 1;
    }

    std::string src_;
    LexerOptions opt_;
    std::vector<Token> tokens_;
    size_t line_pos_ = 0;
    size_t line_start_ = 0;
    int line_ = 1;
};

}  // namespace

std::vector<Token> tokenize_template(const std::string& source, const LexerOptions& options) {
    return Lexer(source, options).run();
}

}  // namespace cria::jinja
