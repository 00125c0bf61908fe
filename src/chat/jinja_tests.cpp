// The `is` tests of Jinja2 (jinja2/tests.py), with Python's type checks.

#include <cmath>

#include "jinja_runtime.h"

namespace cria::jinja {

namespace {

bool is_integer(const Value& v) { return v.is_int(); }

bool all_cased(const std::string& s, bool upper) {
    bool cased = false;
    for (unsigned char c : s) {
        if (c >= 'a' && c <= 'z') {
            if (upper) return false;
            cased = true;
        } else if (c >= 'A' && c <= 'Z') {
            if (!upper) return false;
            cased = true;
        }
    }
    return cased;
}

}  // namespace

int builtin_test(Renderer& r, const std::string& name, const Value& v, Args& args) {
    auto arg = [&](size_t i, const char* kw) -> Value {
        if (!args.has(i, kw)) type_error(name + "() missing 1 required positional argument");
        return args.get(i, kw);
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return is_integer(v);
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict() && !v.is_namespace();
    if (name == "iterable") return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    if (name == "sequence") return (v.is_list() && !v.is_generator()) || v.is_string() || (v.is_dict() && !v.is_namespace());
    if (name == "callable") return v.is_callable();
    if (name == "escaped") return v.is_safe();
    if (name == "lower") return all_cased(v.str(), false);
    if (name == "upper") return all_cased(v.str(), true);
    if (name == "odd" || name == "even") {
        if (v.is_undefined()) Renderer::raise_undefined(v);
        if (!v.is_int() && !v.is_bool()) {
            if (v.is_float()) return std::fmod(v.as_float(), 2.0) == (name == "odd" ? 1.0 : 0.0);
            type_error("unsupported operand type(s) for %: '" + v.type_name() + "' and 'int'");
        }
        const int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
        return ((i % 2) != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
        const Value d = arg(0, "num");
        if (!v.is_number() || !d.is_number()) type_error("unsupported operand type(s) for %");
        if (d.as_float() == 0) throw TemplateError("ZeroDivisionError", "integer division or modulo by zero");
        if (v.is_float() || d.is_float()) return std::fmod(v.as_float(), d.as_float()) == 0;
        const int64_t x = v.is_bool() ? v.as_bool() : v.as_int();
        const int64_t y = d.is_bool() ? d.as_bool() : d.as_int();
        return y == -1 || x % y == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return v.equals(arg(0, "other"));
    if (name == "ne" || name == "!=") return !v.equals(arg(0, "other"));
    if (name == "lt" || name == "lessthan" || name == "<") return python_compare(v, arg(0, "other")) < 0;
    if (name == "le" || name == "<=") return python_compare(v, arg(0, "other")) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return python_compare(v, arg(0, "other")) > 0;
    if (name == "ge" || name == ">=") return python_compare(v, arg(0, "other")) >= 0;
    if (name == "in") return python_in(v, arg(0, "seq"));
    if (name == "sameas") return v.same_object(arg(0, "other"));
    if (name == "filter") return v.is_string() && has_builtin_filter(v.as_string());
    if (name == "test") {
        if (!v.is_string()) return false;
        Args none;
        none.positional.push_back(Value());
        try {
            return builtin_test(r, v.as_string(), Value(), none) >= 0;
        } catch (const TemplateError&) {
            return true;  // it exists; it just wanted other arguments
        }
    }
    return -1;
}

}  // namespace cria::jinja
