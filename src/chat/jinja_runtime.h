#pragma once
// The evaluator's state during one render, shared by the statement
// interpreter (jinja_render.cpp) and the built-in filters, tests, methods and
// globals (jinja_builtins*.cpp).

#include <memory>
#include <string>

#include "cria/chat/jinja.h"
#include "jinja_ast.h"

namespace cria::jinja {

// Variables of one scope; lookups fall back to the parent (lexical scoping:
// a macro sees the scope it was defined in).
struct Frame {
    Dict vars;
    std::shared_ptr<Frame> parent;
};

class Renderer {
public:
    Renderer(const Limits& limits, const Value& variables);

    enum class Flow { Normal, Break, Continue };
    Flow render_body(const Body& body, std::string& out);
    Value eval(const Expr& e);

    Value call(const Value& fn, Args& args, int line);
    Value filter(const std::string& name, const Value& input, Args& args, int line);
    bool test(const std::string& name, const Value& input, Args& args, int line);

    Value get_attr(const Value& obj, const std::string& name);
    Value get_item(const Value& obj, const Value& key);

    // Lists what `for` would iterate (dict -> keys, string -> characters).
    ValueList iterate(const Value& v);
    void step();  // one unit of work; throws when max_steps is exceeded
    void check_size(size_t n) const;
    const Limits& limits() const { return limits_; }

    // Throws the UndefinedError (or SecurityError) that using `v` raises.
    [[noreturn]] static void raise_undefined(const Value& v);

    int line = 0;  // line of the node being evaluated, for error messages

private:
    Flow exec(const Stmt& s, std::string& out);
    Flow exec_for(const Stmt& s, std::string& out);
    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v);
    Value make_macro(const Stmt& s);
    Value binary(const std::string& op, const Value& a, const Value& b);

    Limits limits_;
    std::shared_ptr<Frame> frame_;
    int depth_ = 0;
    uint64_t steps_ = 0;
    struct DepthGuard;
};

// Built-ins (jinja_builtins_*.cpp).
Value builtin_filter(Renderer& r, const std::string& name, const Value& input, Args& args);  // Undefined() when unknown
bool has_builtin_filter(const std::string& name);
int builtin_test(Renderer& r, const std::string& name, const Value& input, Args& args);  // -1 when unknown
Value builtin_method(Renderer& r, const Value& obj, const std::string& name);  // bound method, or Undefined()
void add_builtin_globals(Dict& globals);

// Python semantics shared by the built-ins.
[[noreturn]] void type_error(const std::string& message);
int python_compare(const Value& a, const Value& b);  // <0, 0, >0; TypeError when unorderable
bool python_in(const Value& needle, const Value& haystack);
std::string python_str(const Value& v);
// markupsafe.escape(): a safe string is returned unchanged.
std::string html_escape(const Value& v);  // str(); Undefined -> ""
// UTF-8 code points of a string (Python indexes str by code point).
std::vector<std::string> code_points(const std::string& s);
size_t code_point_count(const std::string& s);
Value python_slice(const Value& v, const Value& start, const Value& stop, const Value& step);
int64_t to_index(const Value& v, const char* what);
std::string python_strip(const std::string& s, const Value& chars, bool left, bool right);
ValueList python_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right);
std::string python_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count);
std::string python_title(const std::string& s);
std::string python_capitalize(const std::string& s);
std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);

}  // namespace cria::jinja
