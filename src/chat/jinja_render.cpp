// The interpreter: runs a parsed template's statements and evaluates its
// expressions with Python's semantics.

#include <algorithm>
#include <cmath>
#include <limits>

#include "jinja_parser.h"
#include "jinja_runtime.h"

namespace cria::jinja {

// --- Template ------------------------------------------------------------------

struct Template::Impl {
    Body body;
    Limits limits;
};

Template::Template(const std::string& source, Limits limits) : impl_(std::make_unique<Impl>()) {
    impl_->limits = limits;
    impl_->body = parse_template(source, limits.max_depth);
}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& variables) const {
    CycleCollector collector;  // declared first: it runs after the renderer is gone
    Renderer r(impl_->limits, variables);
    std::string out;
    try {
        r.render_body(impl_->body, out);
    } catch (TemplateError& e) {
        if (e.line() == 0 && r.line > 0) throw TemplateError(e.kind(), e.message(), r.line);
        throw;
    }
    return out;
}

// --- Python helpers --------------------------------------------------------------

void type_error(const std::string& message) { throw TemplateError("TypeError", message); }

std::string python_str(const Value& v) { return v.str(); }

std::vector<std::string> code_points(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (i + len > s.size()) len = 1;
        for (size_t k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
                len = 1;
                break;
            }
        out.push_back(s.substr(i, len));
        i += len;
    }
    return out;
}

size_t code_point_count(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}

int64_t to_index(const Value& v, const char* what) {
    if (v.is_int()) return v.as_int();
    if (v.is_bool()) return v.as_bool();
    type_error(std::string(what) + " indices must be integers or None or have an __index__ method");
}

int python_compare(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_float(), y = b.as_float();
            return x < y ? -1 : x > y ? 1 : 0;
        }
        const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
        const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order == code point order
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.as_list();
        const auto& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (x[i].equals(y[i])) continue;
            return python_compare(x[i], y[i]);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    if (a.is_undefined() || b.is_undefined()) Renderer::raise_undefined(a.is_undefined() ? a : b);
    type_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool python_in(const Value& needle, const Value& hay) {
    if (hay.is_string()) {
        if (needle.is_undefined()) Renderer::raise_undefined(needle);
        if (!needle.is_string()) type_error("'in <string>' requires string as left operand, not " + needle.type_name());
        return hay.as_string().find(needle.as_string()) != std::string::npos;
    }
    if (hay.is_list()) {
        for (const auto& v : hay.as_list())
            if (v.equals(needle)) return true;
        return false;
    }
    if (hay.is_dict()) return hay.as_dict().find(needle) != nullptr;
    if (hay.is_undefined()) return false;
    type_error("argument of type '" + hay.type_name() + "' is not iterable");
}

Value python_slice(const Value& v, const Value& start_v, const Value& stop_v, const Value& step_v) {
    const int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : to_index(step_v, "slice");
    if (step == 0) throw TemplateError("ValueError", "slice step cannot be zero");
    std::vector<std::string> chars;
    const ValueList* items = nullptr;
    int64_t n;
    if (v.is_string()) {
        chars = code_points(v.as_string());
        n = static_cast<int64_t>(chars.size());
    } else if (v.is_list()) {
        items = &v.as_list();
        n = static_cast<int64_t>(items->size());
    } else if (v.is_undefined()) {
        Renderer::raise_undefined(v);
    } else {
        type_error("'" + v.type_name() + "' object is not subscriptable");
    }
    auto clamp = [&](const Value& x, int64_t def) -> int64_t {
        if (x.is_none() || x.is_undefined()) return def;
        int64_t i = to_index(x, "slice");
        if (i < 0) i += n;
        if (step > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t start = clamp(start_v, step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(stop_v, step > 0 ? n : -1);
    std::string s;
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (items) out.push_back((*items)[static_cast<size_t>(i)]);
        else s += chars[static_cast<size_t>(i)];
    }
    if (items) return v.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    return Value(std::move(s));
}

std::string html_escape(const Value& v) {
    if (v.is_safe()) return v.as_string();
    std::string out;
    for (char c : v.str()) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// --- Renderer ----------------------------------------------------------------------

struct Renderer::DepthGuard {
    Renderer& r;
    explicit DepthGuard(Renderer& renderer) : r(renderer) {
        if (++r.depth_ > r.limits_.max_depth)
            throw TemplateError("RecursionError", "maximum recursion depth exceeded (limit " + std::to_string(r.limits_.max_depth) + ")");
    }
    ~DepthGuard() { --r.depth_; }
};

Renderer::Renderer(const Limits& limits, const Value& variables) : limits_(limits) {
    auto globals = std::make_shared<Frame>();
    add_builtin_globals(globals->vars);
    if (variables.is_dict())
        for (const auto& [k, v] : variables.as_dict().items) globals->vars.set(k, v);
    frame_ = std::make_shared<Frame>();
    frame_->parent = globals;
}

void Renderer::step() {
    if (++steps_ > limits_.max_steps)
        throw TemplateError("LimitError", "template ran too long (more than " + std::to_string(limits_.max_steps) + " steps)");
}

void Renderer::check_size(size_t n) const {
    if (n > limits_.max_collection_size)
        throw TemplateError("LimitError", "value too large (" + std::to_string(n) + " items, limit " +
                                              std::to_string(limits_.max_collection_size) + ")");
}

void Renderer::raise_undefined(const Value& v) {
    const std::string& hint = v.undefined_hint();
    if (hint.rfind("access to attribute", 0) == 0) throw TemplateError("SecurityError", hint);
    if (!hint.empty()) throw TemplateError("UndefinedError", hint);
    throw TemplateError("UndefinedError", "'" + v.undefined_name() + "' is undefined");
}

Value Renderer::lookup(const std::string& name) const {
    for (const Frame* f = frame_.get(); f; f = f->parent.get())
        if (const Value* v = f->vars.find(name)) return *v;
    return Value::undefined(name);
}

void Renderer::assign(const std::string& name, Value v) { frame_->vars.set(Value(name), std::move(v)); }

Renderer::Flow Renderer::render_body(const Body& body, std::string& out) {
    for (const auto& s : body) {
        const Flow f = exec(*s, out);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Stmt& s, std::string& out) {
    step();
    line = s.line;
    auto append = [&](const std::string& text) {
        if (out.size() + text.size() > limits_.max_output_bytes)
            throw TemplateError("LimitError", "output too large (limit " + std::to_string(limits_.max_output_bytes) + " bytes)");
        out += text;
    };
    switch (s.kind) {
        case StmtKind::Text: append(s.text); return Flow::Normal;
        case StmtKind::Output: append(eval(*s.expr).str()); return Flow::Normal;
        case StmtKind::If:
            for (const auto& [cond, body] : s.branches) {
                line = cond->line;
                if (eval(*cond).truthy()) return render_body(body, out);
            }
            return render_body(s.else_body, out);
        case StmtKind::For: return exec_for(s, out);
        case StmtKind::Set: {
            Value v = eval(*s.expr);
            if (!s.attr_target.empty()) {
                Value ns = lookup(s.targets[0]);
                if (!ns.is_namespace()) throw TemplateError("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
                ns.as_dict().set(Value(s.attr_target), std::move(v));
            } else if (s.targets.size() == 1) {
                assign(s.targets[0], std::move(v));
            } else {
                ValueList items = iterate(v);
                if (items.size() != s.targets.size())
                    throw TemplateError("ValueError", items.size() > s.targets.size()
                                                          ? "too many values to unpack (expected " + std::to_string(s.targets.size()) + ")"
                                                          : "not enough values to unpack (expected " + std::to_string(s.targets.size()) +
                                                                ", got " + std::to_string(items.size()) + ")");
                for (size_t i = 0; i < items.size(); ++i) assign(s.targets[i], items[i]);
            }
            return Flow::Normal;
        }
        case StmtKind::SetBlock: {
            std::string inner;
            {
                DepthGuard guard(*this);
                render_body(s.body, inner);
            }
            Value v = Value(std::move(inner));
            if (s.expr2) {
                // The filter chain has a null innermost input: substitute the body.
                std::vector<const Expr*> chain;
                for (const Expr* f = s.expr2.get(); f; f = f->a.get()) chain.push_back(f);
                for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                    Args args;
                    for (const auto& a : (*it)->items) args.positional.push_back(eval(*a));
                    for (const auto& [k, a] : (*it)->kwargs) args.keyword.emplace_back(k, eval(*a));
                    v = filter((*it)->name, v, args, (*it)->line);
                }
            }
            assign(s.targets[0], std::move(v));
            return Flow::Normal;
        }
        case StmtKind::FilterBlock: {
            std::string inner;
            {
                DepthGuard guard(*this);
                render_body(s.body, inner);
            }
            Value v(std::move(inner));
            std::vector<const Expr*> chain;
            for (const Expr* f = s.expr2.get(); f; f = f->a.get()) chain.push_back(f);
            for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                Args args;
                for (const auto& a : (*it)->items) args.positional.push_back(eval(*a));
                for (const auto& [k, a] : (*it)->kwargs) args.keyword.emplace_back(k, eval(*a));
                v = filter((*it)->name, v, args, (*it)->line);
            }
            append(v.str());
            return Flow::Normal;
        }
        case StmtKind::Macro: assign(s.text, make_macro(s)); return Flow::Normal;
        case StmtKind::CallBlock: {
            // caller() renders the block body; it is passed as a keyword argument.
            Value caller = make_macro(s);
            const Expr& call_expr = *s.expr;
            Value fn = eval(*call_expr.a);
            Args args;
            for (const auto& a : call_expr.items) args.positional.push_back(eval(*a));
            for (const auto& [k, a] : call_expr.kwargs) args.keyword.emplace_back(k, eval(*a));
            args.keyword.emplace_back("caller", caller);
            append(call(fn, args, s.line).str());
            return Flow::Normal;
        }
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
        case StmtKind::Scope: return render_body(s.body, out);
    }
    return Flow::Normal;
}

// A macro (or a call block's caller) is a callable closing over the scope it
// was defined in; each call renders the body in a fresh child scope.
Value Renderer::make_macro(const Stmt& s) {
    std::shared_ptr<Frame> closure = frame_;
    // The macro is usually stored in the very scope it closes over: a cycle.
    CycleCollector::track_other([closure]() { decltype(closure->vars.items)().swap(closure->vars.items); });
    const Stmt* def = &s;
    Renderer* self = this;
    const std::string name = s.kind == StmtKind::Macro ? s.text : "caller";
    return Value::callable(name, [self, closure, def, name](Args& args) -> Value {
        DepthGuard guard(*self);
        auto frame = std::make_shared<Frame>();
        frame->parent = closure;
        const auto& params = def->params;
        if (args.positional.size() > params.size())
            type_error("macro '" + name + "' takes not more than " + std::to_string(params.size()) + " argument(s)");
        std::shared_ptr<Frame> saved = self->frame_;
        self->frame_ = frame;
        struct Restore {
            Renderer* r;
            std::shared_ptr<Frame> f;
            ~Restore() { r->frame_ = f; }
        } restore{self, saved};
        for (size_t i = 0; i < params.size(); ++i) {
            const std::string& pname = params[i].first;
            Value v;
            bool found = false;
            for (const auto& [k, kv] : args.keyword)
                if (k == pname) {
                    v = kv;
                    found = true;
                }
            if (!found && i < args.positional.size()) {
                v = args.positional[i];
                found = true;
            }
            if (!found) v = params[i].second ? self->eval(*params[i].second) : Value::undefined(pname);
            frame->vars.set(Value(pname), std::move(v));
        }
        for (const auto& [k, kv] : args.keyword) {
            bool known = k == "caller";
            for (const auto& p : params) known = known || p.first == k;
            if (!known) type_error("macro '" + name + "' takes no keyword argument '" + k + "'");
            if (k == "caller") frame->vars.set(Value(k), kv);
        }
        std::string out;
        self->render_body(def->body, out);
        return Value(std::move(out));  // Markup only under autoescape, which chat templates run without
    });
}

Renderer::Flow Renderer::exec_for(const Stmt& s, std::string& out) {
    Value iterable = eval(*s.expr);
    ValueList all = iterate(iterable);
    auto saved = frame_;
    auto loop_frame = std::make_shared<Frame>();
    loop_frame->parent = saved;
    struct Restore {
        Renderer* r;
        std::shared_ptr<Frame> f;
        ~Restore() { r->frame_ = f; }
    } restore{this, saved};

    auto bind = [&](Frame& f, const Value& item) {
        if (s.targets.size() == 1) {
            f.vars.set(Value(s.targets[0]), item);
            return;
        }
        ValueList parts = iterate(item);
        if (parts.size() != s.targets.size())
            throw TemplateError("ValueError", parts.size() > s.targets.size()
                                                  ? "too many values to unpack (expected " + std::to_string(s.targets.size()) + ")"
                                                  : "not enough values to unpack (expected " + std::to_string(s.targets.size()) +
                                                        ", got " + std::to_string(parts.size()) + ")");
        for (size_t i = 0; i < parts.size(); ++i) f.vars.set(Value(s.targets[i]), parts[i]);
    };

    ValueList items;
    if (s.expr2) {
        // `for x in xs if cond`: the condition sees the loop variable only.
        for (const Value& item : all) {
            step();
            frame_ = std::make_shared<Frame>();
            frame_->parent = saved;
            bind(*frame_, item);
            if (eval(*s.expr2).truthy()) items.push_back(item);
        }
        frame_ = saved;
    } else {
        items = std::move(all);
    }

    if (items.empty()) return render_body(s.else_body, out);
    const auto n = static_cast<int64_t>(items.size());
    auto shared_items = std::make_shared<ValueList>(items);
    for (int64_t i = 0; i < n; ++i) {
        step();
        auto f = std::make_shared<Frame>();
        f->parent = saved;
        frame_ = f;
        Value loop = Value::dict();
        Dict& d = loop.as_dict();
        d.set(Value("index"), Value(i + 1));
        d.set(Value("index0"), Value(i));
        d.set(Value("revindex"), Value(n - i));
        d.set(Value("revindex0"), Value(n - i - 1));
        d.set(Value("first"), Value(i == 0));
        d.set(Value("last"), Value(i == n - 1));
        d.set(Value("length"), Value(n));
        d.set(Value("depth"), Value(int64_t{1}));
        d.set(Value("depth0"), Value(int64_t{0}));
        d.set(Value("previtem"), i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem", "there is no previous item"));
        d.set(Value("nextitem"), i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("nextitem", "there is no next item"));
        d.set(Value("cycle"), Value::callable("cycle", [i](Args& args) -> Value {
                  if (args.positional.empty()) type_error("no items for cycling given");
                  return args.positional[static_cast<size_t>(i) % args.positional.size()];
              }));
        loop.mark_namespace();  // prints like an object, is truthy
        f->vars.set(Value("loop"), loop);
        bind(*f, items[static_cast<size_t>(i)]);
        const Flow flow = render_body(s.body, out);
        if (flow == Flow::Break) break;
    }
    return Flow::Normal;
}

ValueList Renderer::iterate(const Value& v) {
    if (v.is_list()) return v.as_list();
    if (v.is_dict() && !v.is_namespace()) {
        ValueList keys;
        for (const auto& kv : v.as_dict().items) keys.push_back(kv.first);
        return keys;
    }
    if (v.is_string()) {
        ValueList chars;
        for (auto& c : code_points(v.as_string())) chars.emplace_back(std::move(c));
        return chars;
    }
    if (v.is_undefined()) return {};
    type_error("'" + v.type_name() + "' object is not iterable");
}

// --- attribute and item access ---------------------------------------------------

namespace {
std::string object_repr(const Value& v) {
    if (v.is_none()) return "None";
    return v.type_name() + " object";
}
}  // namespace

Value Renderer::get_attr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (!name.empty() && name[0] == '_')
        return Value::undefined(name, "access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
    if (obj.is_namespace()) {
        if (const Value* v = obj.as_dict().find(name)) return *v;
        return Value::undefined(name, "'" + object_repr(obj) + "' has no attribute '" + name + "'");
    }
    Value method = builtin_method(*this, obj, name);
    if (!method.is_undefined() || !method.undefined_hint().empty()) return method;
    if (obj.is_dict())
        if (const Value* v = obj.as_dict().find(name)) return *v;
    return Value::undefined(name, "'" + object_repr(obj) + "' has no attribute '" + name + "'");
}

Value Renderer::get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_dict() && !obj.is_namespace()) {
        if (const Value* v = obj.as_dict().find(key)) return *v;
    } else if (obj.is_list() && (key.is_int() || key.is_bool())) {
        int64_t i = to_index(key, "list");
        const auto n = static_cast<int64_t>(obj.as_list().size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return obj.as_list()[static_cast<size_t>(i)];
    } else if (obj.is_string() && (key.is_int() || key.is_bool())) {
        int64_t i = to_index(key, "string");
        auto chars = code_points(obj.as_string());
        const auto n = static_cast<int64_t>(chars.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value(chars[static_cast<size_t>(i)]);
    }
    if (key.is_string()) return get_attr(obj, key.as_string());
    if (key.is_undefined()) raise_undefined(key);
    return Value::undefined(key.repr(), "'" + object_repr(obj) + "' has no element " + key.repr());
}

// --- expressions ---------------------------------------------------------------

Value Renderer::eval(const Expr& e) {
    DepthGuard guard(*this);
    line = e.line;
    switch (e.kind) {
        case ExprKind::Literal: return e.literal;
        case ExprKind::Name: return lookup(e.name);
        case ExprKind::List:
        case ExprKind::Tuple: {
            ValueList items;
            for (const auto& x : e.items) items.push_back(eval(*x));
            return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
        }
        case ExprKind::Dict: {
            Value d = Value::dict();
            for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                Value k = eval(*e.items[i]);
                if (k.is_list() && !k.is_tuple()) type_error("unhashable type: 'list'");
                if (k.is_dict()) type_error("unhashable type: 'dict'");
                d.as_dict().set(k, eval(*e.items[i + 1]));
            }
            return d;
        }
        case ExprKind::Unary: {
            Value v = eval(*e.a);
            if (e.op == "not") return Value(!v.truthy());
            if (v.is_undefined()) raise_undefined(v);
            if (v.is_int() || v.is_bool()) {
                const int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
                if (e.op == "-") {
                    if (i == std::numeric_limits<int64_t>::min()) throw TemplateError("OverflowError", "integer overflow");
                    return Value(-i);
                }
                return Value(i);
            }
            if (v.is_float()) return Value(e.op == "-" ? -v.as_float() : v.as_float());
            type_error("bad operand type for unary " + e.op + ": '" + v.type_name() + "'");
        }
        case ExprKind::Binary: {
            if (e.op == "and") {
                Value a = eval(*e.a);
                return a.truthy() ? eval(*e.b) : a;
            }
            if (e.op == "or") {
                Value a = eval(*e.a);
                return a.truthy() ? a : eval(*e.b);
            }
            Value a = eval(*e.a);
            Value b = eval(*e.b);
            line = e.line;
            return binary(e.op, a, b);
        }
        case ExprKind::Compare: {
            Value left = eval(*e.a);
            for (size_t i = 0; i < e.items.size(); ++i) {
                Value right = eval(*e.items[i]);
                line = e.line;
                const Value r = binary(e.ops[i], left, right);
                if (!r.truthy()) return r;
                left = std::move(right);
            }
            return Value(true);
        }
        case ExprKind::Ternary:
            if (eval(*e.b).truthy()) return eval(*e.a);
            if (e.c) return eval(*e.c);
            return Value::undefined("", "the inline if-expression on line " + std::to_string(e.line) +
                                            " evaluated to false and no else section was defined.");
        case ExprKind::GetAttr: {
            Value obj = eval(*e.a);
            line = e.line;
            return get_attr(obj, e.name);
        }
        case ExprKind::GetItem: {
            Value obj = eval(*e.a);
            Value key = eval(*e.b);
            line = e.line;
            return get_item(obj, key);
        }
        case ExprKind::Slice: {
            Value obj = eval(*e.a);
            Value parts[3];
            for (size_t i = 0; i < 3; ++i)
                if (e.items[i]) parts[i] = eval(*e.items[i]);
            line = e.line;
            return python_slice(obj, parts[0], parts[1], parts[2]);
        }
        case ExprKind::Call: {
            Value fn = eval(*e.a);
            Args args;
            for (const auto& a : e.items) args.positional.push_back(eval(*a));
            for (const auto& [k, a] : e.kwargs) args.keyword.emplace_back(k, eval(*a));
            return call(fn, args, e.line);
        }
        case ExprKind::Filter: {
            Value input = e.a ? eval(*e.a) : Value();
            Args args;
            for (const auto& a : e.items) args.positional.push_back(eval(*a));
            for (const auto& [k, a] : e.kwargs) args.keyword.emplace_back(k, eval(*a));
            return filter(e.name, input, args, e.line);
        }
        case ExprKind::Test: {
            Value input = eval(*e.a);
            Args args;
            for (const auto& a : e.items) args.positional.push_back(eval(*a));
            for (const auto& [k, a] : e.kwargs) args.keyword.emplace_back(k, eval(*a));
            const bool r = test(e.name, input, args, e.line);
            return Value(e.op == "not" ? !r : r);
        }
    }
    return Value();
}

Value Renderer::call(const Value& fn, Args& args, int at_line) {
    step();
    line = at_line;
    if (fn.is_undefined()) raise_undefined(fn);
    if (!fn.is_callable()) type_error("'" + fn.type_name() + "' object is not callable");
    args.renderer = this;
    return fn.as_callable().fn(args);
}

Value Renderer::filter(const std::string& name, const Value& input, Args& args, int at_line) {
    step();
    line = at_line;
    args.renderer = this;
    if (!has_builtin_filter(name)) throw TemplateError("TemplateAssertionError", "No filter named '" + name + "'.", at_line);
    return builtin_filter(*this, name, input, args);
}

bool Renderer::test(const std::string& name, const Value& input, Args& args, int at_line) {
    step();
    line = at_line;
    args.renderer = this;
    const int r = builtin_test(*this, name, input, args);
    if (r < 0) throw TemplateError("TemplateAssertionError", "No test named '" + name + "'.", at_line);
    return r == 1;
}

namespace {

void check_overflow(bool overflow) {
    if (overflow) throw TemplateError("OverflowError", "integer result too large for this engine (64-bit)");
}

int64_t floor_div(int64_t a, int64_t b) {
    if (a == std::numeric_limits<int64_t>::min() && b == -1) throw TemplateError("OverflowError", "integer overflow");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

// Python's printf-style `str % args`, the common conversions only.
std::string percent_format(const std::string& fmt, const Value& arg) {
    ValueList args = arg.is_tuple() ? arg.as_list() : ValueList{arg};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) throw TemplateError("ValueError", "incomplete format");
        const char c = fmt[i];
        if (c == '%') {
            out += '%';
            continue;
        }
        if (next >= args.size()) type_error("not enough arguments for format string");
        const Value& v = args[next++];
        if (c == 's') out += v.str();
        else if (c == 'r') out += v.repr();
        else if (c == 'd' || c == 'i') {
            if (!v.is_number()) type_error("%d format: a real number is required, not " + v.type_name());
            out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_float()) : v.is_bool() ? v.as_bool() : v.as_int());
        } else throw TemplateError("ValueError", std::string("unsupported format character '") + c + "'");
    }
    if (next < args.size()) type_error("not all arguments converted during string formatting");
    return out;
}

}  // namespace

Value Renderer::binary(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return Value(a.str() + b.str());
    if (op == "==") return Value(a.equals(b));
    if (op == "!=") return Value(!a.equals(b));
    if (op == "in") return Value(python_in(a, b));
    if (op == "not in") return Value(!python_in(a, b));
    if (op == "<") return Value(python_compare(a, b) < 0);
    if (op == "<=") return Value(python_compare(a, b) <= 0);
    if (op == ">") return Value(python_compare(a, b) > 0);
    if (op == ">=") return Value(python_compare(a, b) >= 0);
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    auto unsupported = [&]() {
        type_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
    };
    if (op == "+") {
        if (ints) {
            int64_t r;
            check_overflow(__builtin_add_overflow(x, y, &r));
            return Value(r);
        }
        if (a.is_number() && b.is_number()) return Value(a.as_float() + b.as_float());
        if (a.is_string() && b.is_string()) {
            check_size(a.as_string().size() + b.as_string().size());
            if (a.is_safe() || b.is_safe()) {
                // markupsafe.Markup.__add__/__radd__: the plain side is HTML-escaped.
                return Value(html_escape(a) + html_escape(b)).mark_safe();
            }
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list() && !a.is_generator() && !b.is_generator()) {
            if (a.is_tuple() != b.is_tuple())
                type_error(std::string("can only concatenate ") + (a.is_tuple() ? "tuple" : "list") + " (not \"" + b.type_name() + "\") to " + a.type_name());
            check_size(a.as_list().size() + b.as_list().size());
            ValueList r = a.as_list();
            r.insert(r.end(), b.as_list().begin(), b.as_list().end());
            return a.is_tuple() ? Value::tuple(std::move(r)) : Value::list(std::move(r));
        }
        if (a.is_string()) type_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
        if (a.is_list()) type_error("can only concatenate list (not \"" + b.type_name() + "\") to list");
        unsupported();
    }
    if (op == "-") {
        if (ints) {
            int64_t r;
            check_overflow(__builtin_sub_overflow(x, y, &r));
            return Value(r);
        }
        if (a.is_number() && b.is_number()) return Value(a.as_float() - b.as_float());
        unsupported();
    }
    if (op == "*") {
        if (ints) {
            int64_t r;
            check_overflow(__builtin_mul_overflow(x, y, &r));
            return Value(r);
        }
        if (a.is_number() && b.is_number()) return Value(a.as_float() * b.as_float());
        const Value* seq = (a.is_string() || a.is_list()) ? &a : (b.is_string() || b.is_list()) ? &b : nullptr;
        const Value* count = seq == &a ? &b : &a;
        if (seq && (count->is_int() || count->is_bool()) && !seq->is_generator()) {
            const int64_t n = std::max<int64_t>(0, count->is_bool() ? count->as_bool() : count->as_int());
            const size_t unit = seq->is_string() ? seq->as_string().size() : seq->as_list().size();
            if (unit > 0 && static_cast<uint64_t>(n) > limits_.max_collection_size / unit) check_size(limits_.max_collection_size + 1);
            if (seq->is_string()) {
                std::string r;
                for (int64_t i = 0; i < n; ++i) r += seq->as_string();
                return Value(std::move(r));
            }
            ValueList r;
            for (int64_t i = 0; i < n; ++i) r.insert(r.end(), seq->as_list().begin(), seq->as_list().end());
            return seq->is_tuple() ? Value::tuple(std::move(r)) : Value::list(std::move(r));
        }
        if (seq) type_error("can't multiply sequence by non-int of type '" + count->type_name() + "'");
        unsupported();
    }
    if (op == "/") {
        if (!a.is_number() || !b.is_number()) unsupported();
        if (b.as_float() == 0) throw TemplateError("ZeroDivisionError", "division by zero");
        return Value(a.as_float() / b.as_float());
    }
    if (op == "//") {
        if (!a.is_number() || !b.is_number()) unsupported();
        if (b.as_float() == 0) throw TemplateError("ZeroDivisionError", ints ? "integer division or modulo by zero" : "float floor division by zero");
        if (ints) return Value(floor_div(x, y));
        return Value(std::floor(a.as_float() / b.as_float()));
    }
    if (op == "%") {
        if (a.is_string()) return Value(percent_format(a.as_string(), b));
        if (!a.is_number() || !b.is_number()) unsupported();
        if (b.as_float() == 0) throw TemplateError("ZeroDivisionError", ints ? "integer division or modulo by zero" : "float modulo");
        if (ints) return Value(floor_mod(x, y));
        const double m = std::fmod(a.as_float(), b.as_float());
        return Value((m != 0 && ((m < 0) != (b.as_float() < 0))) ? m + b.as_float() : m);
    }
    if (op == "**") {
        if (ints && y >= 0) {
            int64_t r = 1, base = x, e = y;
            while (e > 0) {
                if (e & 1) check_overflow(__builtin_mul_overflow(r, base, &r));
                e >>= 1;
                if (e > 0) check_overflow(__builtin_mul_overflow(base, base, &base));
            }
            return Value(r);
        }
        if (a.is_number() && b.is_number()) {
            if (a.as_float() == 0 && b.as_float() < 0) throw TemplateError("ZeroDivisionError", "0.0 cannot be raised to a negative power");
            return Value(std::pow(a.as_float(), b.as_float()));
        }
        unsupported();
    }
    throw TemplateError("TemplateSyntaxError", "unknown operator " + op);
}

}  // namespace cria::jinja
