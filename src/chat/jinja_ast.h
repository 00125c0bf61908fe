#pragma once
// The syntax tree of a parsed template. Nodes are plain structs with a kind;
// the few fields a kind uses are documented beside it.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cria/chat/jinja_value.h"

namespace cria::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class ExprKind {
    Literal,   // literal
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key0, value0, key1, value1, ...
    Unary,     // op ("not", "-", "+"), a
    Binary,    // op, a, b (arithmetic, ~, comparisons, in, "not in", and, or)
    Ternary,   // a if b else c (c may be null)
    GetAttr,   // a.name
    GetItem,   // a[b]
    Slice,     // a[items[0]:items[1]:items[2]] (each may be null)
    Call,      // a(items..., kwargs...)
    Filter,    // a | name(items..., kwargs...); a is null in a filter block
    Test,      // a is [not] name(items...); op == "not" when negated
    Compare,   // a ops[0] items[0] ops[1] items[1] ...: a chain like `a < b < c`
};

struct Expr {
    ExprKind kind;
    int line = 0;
    Value literal;
    std::string name;
    std::string op;
    ExprPtr a, b, c;
    std::vector<ExprPtr> items;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;
};

enum class StmtKind {
    Text,       // text
    Output,     // expr
    If,         // branches (cond, body); else_body
    For,        // targets, expr (iterable), expr2 (filter, may be null), body, else_body
    Set,        // targets (one or several names), or attr_target "ns.attr"; expr
    SetBlock,   // targets[0]; expr2 (filter chain, may be null); body
    Macro,      // text (name); params; body
    CallBlock,  // expr (the call); params (caller's); body
    FilterBlock,// expr2 (filter chain); body
    Break,
    Continue,
    Scope,      // body rendered in place ({% generation %})
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;
    ExprPtr expr, expr2;
    std::vector<std::string> targets;
    std::string attr_target;  // for `set ns.attr = ...`: targets[0] is ns, this the attribute
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body, else_body;
    std::vector<std::pair<std::string, ExprPtr>> params;  // name, default (may be null)
};

}  // namespace cria::jinja
