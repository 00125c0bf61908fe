#pragma once
// Cuts template source into tokens exactly as Jinja2's lexer does with the
// settings Hugging Face uses (trim_blocks, lstrip_blocks, keep_trailing_newline
// off): text between tags, tag delimiters, and the tokens inside tags. The
// whitespace rules live here, so the parser never sees stripped whitespace.

#include <string>
#include <vector>

namespace cria::jinja {

enum class TokenType { Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
    TokenType type;
    std::string value;  // text, name, decoded string, number digits, operator
    int line;
    int column;
};

struct LexerOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
    bool keep_trailing_newline = false;
};

// Throws TemplateError("TemplateSyntaxError", ...) on malformed input.
std::vector<Token> tokenize_template(const std::string& source, const LexerOptions& options = {});

}  // namespace cria::jinja
