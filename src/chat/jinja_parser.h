#pragma once
// Builds the syntax tree from the lexer's tokens, following Jinja2's grammar
// and operator precedence (jinja2/parser.py).

#include <string>

#include "jinja_ast.h"

namespace cria::jinja {

// Throws TemplateError("TemplateSyntaxError", ..., line) on bad syntax.
// max_depth bounds the nesting of blocks and expressions.
Body parse_template(const std::string& source, int max_depth);

}  // namespace cria::jinja
