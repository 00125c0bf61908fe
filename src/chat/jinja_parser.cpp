// Recursive-descent parser for Jinja2 templates.

#include "jinja_parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "jinja_lexer.h"

namespace cria::jinja {

namespace {

class Parser {
public:
    Parser(std::vector<Token> tokens, int max_depth) : t_(std::move(tokens)), max_depth_(max_depth) {}

    Body parse() {
        Body body = parse_body({});
        if (cur().type != TokenType::End) fail("unexpected token");
        return body;
    }

private:
    // --- token helpers ---
    const Token& cur() const { return t_[pos_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
    void next() {
        if (pos_ + 1 < t_.size()) ++pos_;
    }
    bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().value == op; }
    bool is_name(const char* name) const { return cur().type == TokenType::Name && cur().value == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    [[noreturn]] void fail(const std::string& message) const {
        throw TemplateError("TemplateSyntaxError", message, cur().line, cur().column);
    }
    std::string describe(const Token& t) const {
        switch (t.type) {
            case TokenType::End: return "end of template";
            case TokenType::BlockEnd: return "end of statement block";
            case TokenType::VariableEnd: return "end of print statement";
            case TokenType::Name: return "'" + t.value + "'";
            case TokenType::String: return "string";
            case TokenType::Operator: return "'" + t.value + "'";
            default: return "token";
        }
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) fail(std::string("expected token '") + op + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != TokenType::Name) fail("expected name, got " + describe(cur()));
        std::string n = cur().value;
        next();
        return n;
    }
    void expect_block_end() {
        if (cur().type != TokenType::BlockEnd) fail("expected token 'end of statement block', got " + describe(cur()));
        next();
    }

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > p.max_depth_) p.fail("template nesting too deep (limit " + std::to_string(p.max_depth_) + ")");
        }
        ~DepthGuard() { --p.depth_; }
    };

    ExprPtr make(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // --- statements ---

    // Parses until a block tag whose first name is in `ends` (left unconsumed,
    // positioned on that name) or the end of the template.
    Body parse_body(const std::set<std::string>& ends) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& tok = cur();
            if (tok.type == TokenType::End) {
                if (!ends.empty()) {
                    std::string expected;
                    for (const auto& e : ends) expected += (expected.empty() ? "'" : " or '") + e + "'";
                    fail("Unexpected end of template. Jinja was looking for the following tags: " + expected + ".");
                }
                return body;
            }
            if (tok.type == TokenType::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Text;
                s->line = tok.line;
                s->text = tok.value;
                body.push_back(std::move(s));
                next();
            } else if (tok.type == TokenType::VariableBegin) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Output;
                s->line = tok.line;
                next();
                s->expr = parse_tuple(true);
                if (cur().type != TokenType::VariableEnd) fail("expected token 'end of print statement', got " + describe(cur()));
                next();
                body.push_back(std::move(s));
            } else if (tok.type == TokenType::BlockBegin) {
                next();
                if (cur().type != TokenType::Name) fail("tag name expected");
                if (ends.count(cur().value)) return body;
                body.push_back(parse_statement());
            } else {
                fail("unexpected " + describe(tok));
            }
        }
    }

    std::unique_ptr<Stmt> parse_statement() {
        const std::string tag = cur().value;
        const int line = cur().line;
        auto s = std::make_unique<Stmt>();
        s->line = line;
        next();
        if (tag == "if") {
            s->kind = StmtKind::If;
            ExprPtr cond = parse_tuple(false);
            expect_block_end();
            while (true) {
                Body body = parse_body({"elif", "else", "endif"});
                s->branches.emplace_back(std::move(cond), std::move(body));
                const std::string t = cur().value;
                next();
                if (t == "elif") {
                    cond = parse_tuple(false);
                    expect_block_end();
                    continue;
                }
                if (t == "else") {
                    expect_block_end();
                    s->else_body = parse_body({"endif"});
                    next();
                }
                expect_block_end();
                break;
            }
        } else if (tag == "for") {
            s->kind = StmtKind::For;
            s->targets = parse_assign_names();
            if (!skip_name("in")) fail("expected 'in'");
            s->expr = parse_tuple(false, /*with_condexpr=*/false);
            if (skip_name("if")) s->expr2 = parse_expression(true);
            if (is_name("recursive")) fail("recursive for loops are not supported");
            expect_block_end();
            s->body = parse_body({"endfor", "else"});
            if (cur().value == "else") {
                next();
                expect_block_end();
                s->else_body = parse_body({"endfor"});
            }
            next();
            expect_block_end();
        } else if (tag == "set") {
            if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == ".") {
                s->kind = StmtKind::Set;
                s->targets.push_back(expect_name());
                next();
                s->attr_target = expect_name();
                expect_op("=");
                s->expr = parse_tuple(false);
                expect_block_end();
            } else {
                s->targets = parse_assign_names();
                if (skip_op("=")) {
                    s->kind = StmtKind::Set;
                    s->expr = parse_tuple(false);
                    expect_block_end();
                } else {
                    if (s->targets.size() != 1) fail("a block set takes one name");
                    s->kind = StmtKind::SetBlock;
                    if (is_op("|")) s->expr2 = parse_filters(nullptr);
                    expect_block_end();
                    s->body = parse_body({"endset"});
                    next();
                    expect_block_end();
                }
            }
        } else if (tag == "macro") {
            s->kind = StmtKind::Macro;
            s->text = expect_name();
            parse_signature(s->params);
            expect_block_end();
            s->body = parse_body({"endmacro"});
            next();
            expect_block_end();
        } else if (tag == "call") {
            s->kind = StmtKind::CallBlock;
            if (is_op("(")) parse_signature(s->params);
            s->expr = parse_expression(true);
            if (s->expr->kind != ExprKind::Call) fail("expected call");
            expect_block_end();
            s->body = parse_body({"endcall"});
            next();
            expect_block_end();
        } else if (tag == "filter") {
            s->kind = StmtKind::FilterBlock;
            s->expr2 = parse_filters(nullptr, /*first_pipe=*/false);
            expect_block_end();
            s->body = parse_body({"endfilter"});
            next();
            expect_block_end();
        } else if (tag == "generation") {
            s->kind = StmtKind::Scope;
            expect_block_end();
            s->body = parse_body({"endgeneration"});
            next();
            expect_block_end();
        } else if (tag == "break" || tag == "continue") {
            if (loop_depth_hint_ < 0) fail("loop control outside a loop");
            s->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
            expect_block_end();
        } else {
            --pos_;
            fail("Encountered unknown tag '" + tag + "'.");
        }
        return s;
    }

    // Names for `for` and `set` targets: `a`, `a, b`, `(a, b)`.
    std::vector<std::string> parse_assign_names() {
        std::vector<std::string> names;
        const bool paren = skip_op("(");
        do {
            if (!names.empty() && (is_name("in") || is_op("=") || is_op(")"))) break;
            names.push_back(expect_name());
        } while (skip_op(","));
        if (paren) expect_op(")");
        for (const auto& n : names)
            if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
                fail("Can't assign to constant '" + n + "'");
        return names;
    }

    void parse_signature(std::vector<std::pair<std::string, ExprPtr>>& params) {
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string name = expect_name();
            ExprPtr def;
            if (skip_op("=")) def = parse_expression(true);
            params.emplace_back(std::move(name), std::move(def));
        }
        next();
    }

    // --- expressions ---

    // A comma-separated list becomes a tuple; `explicit_parens` is for {{ }}.
    ExprPtr parse_tuple(bool /*in_output*/, bool with_condexpr = true) {
        const int line = cur().line;
        ExprPtr first = parse_expression(with_condexpr);
        if (!is_op(",")) return first;
        auto t = make(ExprKind::Tuple, line);
        t->items.push_back(std::move(first));
        while (skip_op(",")) {
            if (cur().type == TokenType::BlockEnd || cur().type == TokenType::VariableEnd || is_op(")") || is_name("if")) break;
            t->items.push_back(parse_expression(with_condexpr));
        }
        return t;
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        const int line = cur().line;
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            next();
            auto t = make(ExprKind::Ternary, line);
            t->b = parse_or();
            if (skip_name("else")) t->c = parse_condexpr();
            t->a = std::move(expr);
            expr = std::move(t);
        }
        return expr;
    }

    ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
        auto e = make(ExprKind::Binary, line);
        e->op = op;
        e->a = std::move(a);
        e->b = std::move(b);
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const int line = cur().line;
            next();
            left = binary("or", std::move(left), parse_and(), line);
        }
        return left;
    }
    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const int line = cur().line;
            next();
            left = binary("and", std::move(left), parse_not(), line);
        }
        return left;
    }
    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            auto e = make(ExprKind::Unary, cur().line);
            next();
            e->op = "not";
            e->a = parse_not();
            return e;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        ExprPtr left = parse_math1();
        // Jinja2 chains comparisons: a < b < c means (a < b) and (b < c), b evaluated once.
        std::vector<std::string> ops;
        std::vector<ExprPtr> operands;
        const int line = cur().line;
        while (true) {
            std::string op;
            if (cur().type == TokenType::Operator &&
                (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
                 cur().value == ">" || cur().value == ">=")) {
                op = cur().value;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
                op = "not in";
                next();
                next();
            } else {
                break;
            }
            ops.push_back(op);
            operands.push_back(parse_math1());
        }
        if (ops.empty()) return left;
        if (ops.size() == 1) return binary(ops[0], std::move(left), std::move(operands[0]), line);
        auto chain = make(ExprKind::Compare, line);
        chain->a = std::move(left);
        chain->items = std::move(operands);
        chain->ops = std::move(ops);
        return chain;
    }
    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const std::string op = cur().value;
            const int line = cur().line;
            next();
            left = binary(op, std::move(left), parse_concat(), line);
        }
        return left;
    }
    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            const int line = cur().line;
            next();
            left = binary("~", std::move(left), parse_math2(), line);
        }
        return left;
    }
    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const std::string op = cur().value;
            const int line = cur().line;
            next();
            left = binary(op, std::move(left), parse_pow(), line);
        }
        return left;
    }
    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const int line = cur().line;
            next();
            left = binary("**", std::move(left), parse_unary(true), line);
        }
        return left;
    }
    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            node = make(ExprKind::Unary, cur().line);
            node->op = cur().value;
            next();
            node->a = parse_unary(false);
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token tok = cur();
        if (tok.type == TokenType::Name) {
            next();
            auto e = make(ExprKind::Literal, tok.line);
            if (tok.value == "true" || tok.value == "True") e->literal = Value(true);
            else if (tok.value == "false" || tok.value == "False") e->literal = Value(false);
            else if (tok.value == "none" || tok.value == "None") e->literal = Value::none();
            else {
                e->kind = ExprKind::Name;
                e->name = tok.value;
            }
            return e;
        }
        if (tok.type == TokenType::String) {
            std::string s;
            while (cur().type == TokenType::String) {  // adjacent literals concatenate
                s += cur().value;
                next();
            }
            auto e = make(ExprKind::Literal, tok.line);
            e->literal = Value(std::move(s));
            return e;
        }
        if (tok.type == TokenType::Integer) {
            next();
            auto e = make(ExprKind::Literal, tok.line);
            int64_t v = 0;
            const auto res = std::from_chars(tok.value.data(), tok.value.data() + tok.value.size(), v);
            if (res.ec != std::errc()) e->literal = Value(std::strtod(tok.value.c_str(), nullptr));  // beyond int64
            else e->literal = Value(v);
            return e;
        }
        if (tok.type == TokenType::Float) {
            next();
            auto e = make(ExprKind::Literal, tok.line);
            e->literal = Value(std::strtod(tok.value.c_str(), nullptr));
            return e;
        }
        if (is_op("(")) {
            next();
            if (skip_op(")")) return make(ExprKind::Tuple, tok.line);
            ExprPtr first = parse_expression(true);
            if (skip_op(")")) return first;
            auto t = make(ExprKind::Tuple, tok.line);
            t->items.push_back(std::move(first));
            while (skip_op(",")) {
                if (is_op(")")) break;
                t->items.push_back(parse_expression(true));
            }
            expect_op(")");
            return t;
        }
        if (is_op("[")) {
            next();
            auto l = make(ExprKind::List, tok.line);
            while (!is_op("]")) {
                if (!l->items.empty()) expect_op(",");
                if (is_op("]")) break;
                l->items.push_back(parse_expression(true));
            }
            next();
            return l;
        }
        if (is_op("{")) {
            next();
            auto d = make(ExprKind::Dict, tok.line);
            while (!is_op("}")) {
                if (!d->items.empty()) expect_op(",");
                if (is_op("}")) break;
                d->items.push_back(parse_expression(true));
                expect_op(":");
                d->items.push_back(parse_expression(true));
            }
            next();
            return d;
        }
        fail("unexpected " + describe(tok));
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".")) {
                const int line = cur().line;
                next();
                if (cur().type == TokenType::Name) {
                    auto e = make(ExprKind::GetAttr, line);
                    e->name = cur().value;
                    next();
                    e->a = std::move(node);
                    node = std::move(e);
                } else if (cur().type == TokenType::Integer) {
                    auto e = make(ExprKind::GetItem, line);
                    e->b = make(ExprKind::Literal, line);
                    e->b->literal = Value(static_cast<int64_t>(std::strtoll(cur().value.c_str(), nullptr, 10)));
                    next();
                    e->a = std::move(node);
                    node = std::move(e);
                } else {
                    fail("expected name or number");
                }
            } else if (is_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const int line = cur().line;
        next();
        // Either one expression or a slice with up to three parts.
        ExprPtr parts[3];
        int part = 0;
        bool is_slice = false;
        while (!is_op("]")) {
            if (is_op(":")) {
                if (++part > 2) fail("invalid slice");
                is_slice = true;
                next();
                continue;
            }
            if (parts[part]) fail("expected ']'");
            parts[part] = parse_expression(true);
            if (!is_slice && is_op(",")) {  // a[x, y] subscripts with a tuple
                auto t = make(ExprKind::Tuple, line);
                t->items.push_back(std::move(parts[0]));
                while (skip_op(",")) {
                    if (is_op("]")) break;
                    t->items.push_back(parse_expression(true));
                }
                parts[0] = std::move(t);
            }
        }
        next();
        if (!is_slice && !parts[0]) fail("expected subscript expression");
        if (!is_slice) {
            auto e = make(ExprKind::GetItem, line);
            e->a = std::move(node);
            e->b = std::move(parts[0]);
            return e;
        }
        auto e = make(ExprKind::Slice, line);
        e->a = std::move(node);
        for (auto& p : parts) e->items.push_back(std::move(p));
        return e;
    }

    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
            if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
                std::string key = cur().value;
                next();
                next();
                e.kwargs.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.kwargs.empty()) fail("invalid syntax for function call expression");
                e.items.push_back(parse_expression(true));
            }
        }
        next();
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make(ExprKind::Call, cur().line);
        parse_call_args(*e);
        e->a = std::move(node);
        return e;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) node = parse_filters(std::move(node));
            else if (is_name("is")) node = parse_test(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else return node;
        }
    }

    // One or more `| name(args)`; in a filter block the first has no pipe.
    ExprPtr parse_filters(ExprPtr node, bool first_pipe = true) {
        bool first = true;
        while ((first && !first_pipe) || is_op("|")) {
            if (!(first && !first_pipe)) next();
            first = false;
            auto f = make(ExprKind::Filter, cur().line);
            f->name = expect_name();
            while (skip_op(".")) {
                f->name += '.';
                f->name += expect_name();
            }
            if (is_op("(")) parse_call_args(*f);
            f->a = std::move(node);
            node = std::move(f);
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        auto t = make(ExprKind::Test, cur().line);
        next();  // is
        if (skip_name("not")) t->op = "not";
        t->name = expect_name();
        while (skip_op(".")) {
            t->name += '.';
            t->name += expect_name();
        }
        if (is_op("(")) {
            parse_call_args(*t);
        } else if ((cur().type == TokenType::Name || cur().type == TokenType::String || cur().type == TokenType::Integer ||
                    cur().type == TokenType::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is");
            t->items.push_back(parse_postfix(parse_primary()));
        }
        t->a = std::move(node);
        return t;
    }

    std::vector<Token> t_;
    size_t pos_ = 0;
    int depth_ = 0;
    int max_depth_;
    int loop_depth_hint_ = 0;
};

}  // namespace

Body parse_template(const std::string& source, int max_depth) {
    return Parser(tokenize_template(source), max_depth).parse();
}

}  // namespace cria::jinja
