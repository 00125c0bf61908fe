#pragma once
// The values a Jinja template computes with. They model the Python objects
// Jinja2 works on (None, bool, int, float, str, list, dict, callables and
// Undefined) closely enough that printing, comparing and JSON-encoding them
// gives the same bytes as Python does: chat templates are rendered by
// Hugging Face with Python's Jinja2, and a model is trained on those bytes.
//
// Lists and dicts are shared (reference semantics, as in Python), so a
// namespace() changed inside a loop is seen outside it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"

namespace cria::jinja {

// A render or parse failure. `kind` is the Python exception class Jinja2
// would raise ("UndefinedError", "TemplateError", "TypeError",
// "TemplateSyntaxError", "SecurityError", ...), `message` its text, so a
// caller can show exactly what Python would have shown.
class TemplateError : public cria::Error {
public:
    TemplateError(std::string kind, std::string message, int line = 0, int column = 0);
    const std::string& kind() const { return kind_; }
    const std::string& message() const { return message_; }
    int line() const { return line_; }
    int column() const { return column_; }  // known for syntax errors only; 0 otherwise
    // "Kind: message", the form Python prints as the last line of a traceback.
    std::string python_form() const { return kind_ + ": " + message_; }

private:
    std::string kind_;
    std::string message_;
    int line_;
    int column_;
};

class Value;
using ValueList = std::vector<Value>;
struct Dict;
struct Callable;
struct Args;

class Value {
public:
    enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

    Value() = default;  // Undefined
    static Value undefined(std::string name = {}, std::string hint = {});
    static Value none();
    Value(bool b);
    Value(int64_t i);
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d);
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    static Value list(ValueList items = {});
    static Value tuple(ValueList items);
    static Value dict();
    static Value callable(std::string name, std::function<Value(Args&)> fn);

    Type type() const { return type_; }
    bool is_undefined() const { return type_ == Type::Undefined; }
    bool is_none() const { return type_ == Type::None; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_int() const { return type_ == Type::Int; }
    bool is_float() const { return type_ == Type::Float; }
    bool is_number() const { return type_ == Type::Int || type_ == Type::Float || type_ == Type::Bool; }
    bool is_string() const { return type_ == Type::String; }
    bool is_list() const { return type_ == Type::List; }
    bool is_dict() const { return type_ == Type::Dict; }
    bool is_callable() const { return type_ == Type::Callable; }
    // A tuple is a list that prints with parentheses; a generator (what
    // Jinja2's map/select return) is a list that JSON refuses to encode.
    bool is_tuple() const { return type_ == Type::List && flavor_ == Flavor::Tuple; }
    bool is_generator() const { return type_ == Type::List && flavor_ == Flavor::Generator; }
    bool is_namespace() const { return type_ == Type::Dict && flavor_ == Flavor::Namespace; }
    Value& mark_generator() { flavor_ = Flavor::Generator; return *this; }
    Value& mark_namespace() { flavor_ = Flavor::Namespace; return *this; }
    // A string produced by a macro, caller() or the safe filter.
    bool is_safe() const { return flavor_ == Flavor::Safe; }
    Value& mark_safe() { if (type_ == Type::String) flavor_ = Flavor::Safe; return *this; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return i_; }
    double as_float() const { return type_ == Type::Float ? d_ : static_cast<double>(type_ == Type::Bool ? b_ : i_); }
    const std::string& as_string() const { return *s_; }
    ValueList& as_list() const { return *list_; }
    Dict& as_dict() const { return *dict_; }
    const Callable& as_callable() const { return *fn_; }
    // Undefined: the variable or attribute that was missing, and Jinja2's
    // message for it (empty until an access turns it into an error).
    const std::string& undefined_name() const { return *s_; }
    const std::string& undefined_hint() const { return hint_ ? *hint_ : empty_string(); }

    // Python truthiness.
    bool truthy() const;
    // Python str(): what {{ value }} prints.
    std::string str() const;
    // Python repr(), used inside str() of containers.
    std::string repr() const;
    // Python's type name, for error messages ("str", "int", "dict", ...).
    std::string type_name() const;
    // Python ==.
    bool equals(const Value& other) const;
    // Identity for lists/dicts (Python `is`), equality otherwise.
    bool same_object(const Value& other) const;

    // Deeper JSON is refused with cria::Error naming the limit (the
    // conversion recurses once per level; requests carry JSON of any depth).
    static constexpr int kMaxJsonDepth = 128;
    static Value from_json(const nlohmann::ordered_json& j);
    nlohmann::ordered_json to_json() const;

private:
    enum class Flavor : uint8_t { Plain, Tuple, Generator, Namespace, Safe };
    static const std::string& empty_string();

    Type type_ = Type::Undefined;
    Flavor flavor_ = Flavor::Plain;
    bool b_ = false;
    int64_t i_ = 0;
    double d_ = 0;
    std::shared_ptr<const std::string> s_;     // string, or undefined's name
    std::shared_ptr<const std::string> hint_;  // undefined's message
    std::shared_ptr<ValueList> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<const Callable> fn_;
};

// An insertion-ordered dict, as Python's. Keys are usually strings; other
// hashable values are allowed and compared with Python ==.
struct Dict {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const Value& key) const;
    const Value* find(const std::string& key) const;
    void set(const Value& key, Value value);
    size_t size() const { return items.size(); }
};

// Arguments of a call: positional then keyword, in source order.
struct Args {
    ValueList positional;
    std::vector<std::pair<std::string, Value>> keyword;
    class Renderer* renderer = nullptr;  // the render in progress (for callbacks into filters/tests)

    // The argument at `pos` or named `name`, or `fallback` if not given.
    Value get(size_t pos, const std::string& name, Value fallback = Value()) const;
    bool has(size_t pos, const std::string& name) const;
};

struct Callable {
    std::string name;
    std::function<Value(Args&)> fn;
};

// Python frees reference cycles (a namespace holding itself, a macro stored
// in the scope it closes over) with its garbage collector; shared_ptr cannot.
// While a CycleCollector is alive on this thread, every list and dict created
// is recorded, and the collector empties those still alive when it ends, so
// no cycle outlives a render. Nothing created during a render escapes it
// (render returns a string), which is what makes this safe.
class CycleCollector {
public:
    CycleCollector();
    ~CycleCollector();
    CycleCollector(const CycleCollector&) = delete;
    CycleCollector& operator=(const CycleCollector&) = delete;
    static void track(const std::shared_ptr<ValueList>& list);
    static void track(const std::shared_ptr<Dict>& dict);
    // Any other object that may hold Values in a cycle: cleared by `clear` at the end.
    static void track_other(std::function<void()> clear);
    struct State;

private:
    State* previous_;
    std::unique_ptr<State> state_;
};

// Python float repr (shortest round-trip digits, "1.0", "1e+16", "inf").
std::string python_float_repr(double d);
// Python repr() of a str.
std::string python_string_repr(const std::string& s);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as Python
// does it; indent < 0 means None. Throws TypeError for values JSON cannot hold.
struct JsonDumpOptions {
    bool ensure_ascii = false;
    int indent = -1;
    std::string indent_string;  // used instead of spaces when indent was given as a string
    bool has_indent = false;
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};
std::string python_json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace cria::jinja
