// Value: Python-like data for the Jinja engine, with Python's printing rules.

#include "cria/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace cria::jinja {

namespace {
std::string with_line(const std::string& kind, const std::string& message, int line, int column) {
    std::string s = kind + ": " + message;
    if (line > 0) {
        s += " (template line " + std::to_string(line);
        if (column > 0) s += ", column " + std::to_string(column);
        s += ")";
    }
    return s;
}
}  // namespace

TemplateError::TemplateError(std::string kind, std::string message, int line, int column)
    : cria::Error(with_line(kind, message, line, column)),
      kind_(std::move(kind)),
      message_(std::move(message)),
      line_(line),
      column_(column) {}

// --- CycleCollector -----------------------------------------------------------

struct CycleCollector::State {
    std::vector<std::weak_ptr<ValueList>> lists;
    std::vector<std::weak_ptr<Dict>> dicts;
    std::vector<std::function<void()>> others;
    size_t compact_at = 1024;

    // Forget objects already freed, so a long render does not grow the record.
    void maybe_compact() {
        if (lists.size() + dicts.size() < compact_at) return;
        std::erase_if(lists, [](const auto& w) { return w.expired(); });
        std::erase_if(dicts, [](const auto& w) { return w.expired(); });
        compact_at = std::max<size_t>(1024, 2 * (lists.size() + dicts.size()));
    }
};

namespace {
thread_local CycleCollector::State* t_collector = nullptr;
}

CycleCollector::CycleCollector() : previous_(t_collector), state_(std::make_unique<State>()) { t_collector = state_.get(); }

CycleCollector::~CycleCollector() {
    t_collector = previous_;
    // Move contents out before destroying them, so destruction never walks
    // into a container being cleared.
    for (auto& clear : state_->others) clear();
    for (auto& w : state_->lists)
        if (auto p = w.lock()) ValueList().swap(*p);
    for (auto& w : state_->dicts)
        if (auto p = w.lock()) decltype(p->items)().swap(p->items);
}

void CycleCollector::track(const std::shared_ptr<ValueList>& list) {
    if (!t_collector) return;
    t_collector->lists.push_back(list);
    t_collector->maybe_compact();
}
void CycleCollector::track(const std::shared_ptr<Dict>& dict) {
    if (!t_collector) return;
    t_collector->dicts.push_back(dict);
    t_collector->maybe_compact();
}
void CycleCollector::track_other(std::function<void()> clear) {
    if (t_collector) t_collector->others.push_back(std::move(clear));
}

const std::string& Value::empty_string() {
    static const std::string empty;
    return empty;
}

Value Value::undefined(std::string name, std::string hint) {
    Value v;
    v.s_ = std::make_shared<const std::string>(std::move(name));
    if (!hint.empty()) v.hint_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}
Value Value::none() {
    Value v;
    v.type_ = Type::None;
    return v;
}
Value::Value(bool b) : type_(Type::Bool), b_(b) {}
Value::Value(int64_t i) : type_(Type::Int), i_(i) {}
Value::Value(double d) : type_(Type::Float), d_(d) {}
Value::Value(std::string s) : type_(Type::String), s_(std::make_shared<const std::string>(std::move(s))) {}
Value Value::list(ValueList items) {
    Value v;
    v.type_ = Type::List;
    v.list_ = std::make_shared<ValueList>(std::move(items));
    CycleCollector::track(v.list_);
    return v;
}
Value Value::tuple(ValueList items) {
    Value v = list(std::move(items));
    v.flavor_ = Flavor::Tuple;
    return v;
}
Value Value::dict() {
    Value v;
    v.type_ = Type::Dict;
    v.dict_ = std::make_shared<Dict>();
    CycleCollector::track(v.dict_);
    return v;
}
Value Value::callable(std::string name, std::function<Value(Args&)> fn) {
    Value v;
    v.type_ = Type::Callable;
    v.fn_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

bool Value::truthy() const {
    switch (type_) {
        case Type::Undefined:
        case Type::None: return false;
        case Type::Bool: return b_;
        case Type::Int: return i_ != 0;
        case Type::Float: return d_ != 0;
        case Type::String: return !s_->empty();
        case Type::List: return is_generator() || !list_->empty();
        case Type::Dict: return is_namespace() || !dict_->items.empty();
        case Type::Callable: return true;
    }
    return false;
}

std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci = [-]D[.DDD]e[+-]XX
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::stoi(sci.substr(e + 1));
    const int decpt = exponent + 1;  // position of the decimal point relative to the digits
    const int n = static_cast<int>(digits.size());
    std::string out;
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
        } else if (decpt >= n) {
            out = digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
        }
    } else {
        out = digits.substr(0, 1);
        if (n > 1) out += "." + digits.substr(1);
        const int x = decpt - 1;
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
        out += eb;
    }
    return sign + out;
}

std::string python_string_repr(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == static_cast<unsigned char>(quote)) { out += '\\'; out += static_cast<char>(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else out += static_cast<char>(c);
    }
    out += quote;
    return out;
}

std::string Value::str() const {
    switch (type_) {
        case Type::Undefined: return "";
        case Type::String: return *s_;
        default: return repr();
    }
}

std::string Value::repr() const {
    switch (type_) {
        case Type::Undefined: return "Undefined";
        case Type::None: return "None";
        case Type::Bool: return b_ ? "True" : "False";
        case Type::Int: return std::to_string(i_);
        case Type::Float: return python_float_repr(d_);
        case Type::String: return python_string_repr(*s_);
        case Type::List: {
            if (is_generator()) return "<generator object>";
            std::string out = is_tuple() ? "(" : "[";
            for (size_t i = 0; i < list_->size(); ++i) {
                if (i) out += ", ";
                out += (*list_)[i].repr();
            }
            if (is_tuple() && list_->size() == 1) out += ",";
            out += is_tuple() ? ")" : "]";
            return out;
        }
        case Type::Dict: {
            std::string out = is_namespace() ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [k, v] : dict_->items) {
                if (!first) out += ", ";
                first = false;
                out += k.repr() + ": " + v.repr();
            }
            out += is_namespace() ? "}>" : "}";
            return out;
        }
        case Type::Callable: return "<function " + fn_->name + ">";
    }
    return "";
}

std::string Value::type_name() const {
    switch (type_) {
        case Type::Undefined: return "Undefined";
        case Type::None: return "NoneType";
        case Type::Bool: return "bool";
        case Type::Int: return "int";
        case Type::Float: return "float";
        case Type::String: return "str";
        case Type::List: return is_tuple() ? "tuple" : is_generator() ? "generator" : "list";
        case Type::Dict: return is_namespace() ? "Namespace" : "dict";
        case Type::Callable: return "function";
    }
    return "object";
}

bool Value::equals(const Value& o) const {
    if (is_number() && o.is_number()) {
        if (is_float() || o.is_float()) return as_float() == o.as_float();
        const int64_t a = is_bool() ? b_ : i_;
        const int64_t b = o.is_bool() ? o.b_ : o.i_;
        return a == b;
    }
    if (type_ != o.type_) return false;
    switch (type_) {
        case Type::Undefined:
        case Type::None: return true;
        case Type::String: return *s_ == *o.s_;
        case Type::List: {
            if (is_tuple() != o.is_tuple()) return false;
            if (is_generator() || o.is_generator()) return list_ == o.list_;
            if (list_->size() != o.list_->size()) return false;
            for (size_t i = 0; i < list_->size(); ++i)
                if (!(*list_)[i].equals((*o.list_)[i])) return false;
            return true;
        }
        case Type::Dict: {
            if (is_namespace() || o.is_namespace()) return dict_ == o.dict_;
            if (dict_->size() != o.dict_->size()) return false;
            for (const auto& [k, v] : dict_->items) {
                const Value* ov = o.dict_->find(k);
                if (!ov || !v.equals(*ov)) return false;
            }
            return true;
        }
        case Type::Callable: return fn_ == o.fn_;
        default: return false;
    }
}

bool Value::same_object(const Value& o) const {
    if (type_ != o.type_) return false;
    if (type_ == Type::List) return list_ == o.list_;
    if (type_ == Type::Dict) return dict_ == o.dict_;
    return equals(o);
}

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int depth);

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 1); }

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
    if (depth > Value::kMaxJsonDepth)
        throw Error("JSON nested deeper than " + std::to_string(Value::kMaxJsonDepth) +
                    " levels cannot become a template value");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
            return Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            ValueList items;
            items.reserve(j.size());
            for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Value d = Value::dict();
            for (const auto& [k, v] : j.items()) d.as_dict().items.emplace_back(Value(k), from_json_at(v, depth + 1));
            return d;
        }
        default: return Value::none();
    }
}

}  // namespace

nlohmann::ordered_json Value::to_json() const {
    switch (type_) {
        case Type::None: return nullptr;
        case Type::Bool: return b_;
        case Type::Int: return i_;
        case Type::Float: return d_;
        case Type::String: return *s_;
        case Type::List: {
            auto a = nlohmann::ordered_json::array();
            for (const auto& e : *list_) a.push_back(e.to_json());
            return a;
        }
        case Type::Dict: {
            auto o = nlohmann::ordered_json::object();
            for (const auto& [k, v] : dict_->items) o[k.str()] = v.to_json();
            return o;
        }
        default: throw TemplateError("TypeError", "Object of type " + type_name() + " is not JSON serializable");
    }
}

const Value* Dict::find(const Value& key) const {
    for (const auto& kv : items)
        if (kv.first.equals(key)) return &kv.second;
    return nullptr;
}
const Value* Dict::find(const std::string& key) const {
    for (const auto& kv : items)
        if (kv.first.is_string() && kv.first.as_string() == key) return &kv.second;
    return nullptr;
}
void Dict::set(const Value& key, Value value) {
    for (auto& kv : items)
        if (kv.first.equals(key)) {
            kv.second = std::move(value);
            return;
        }
    items.emplace_back(key, std::move(value));
}

Value Args::get(size_t pos, const std::string& name, Value fallback) const {
    for (const auto& [k, v] : keyword)
        if (k == name) return v;
    if (pos < positional.size()) return positional[pos];
    return fallback;
}
bool Args::has(size_t pos, const std::string& name) const {
    if (pos < positional.size()) return true;
    for (const auto& kv : keyword)
        if (kv.first == name) return true;
    return false;
}

// --- json.dumps ------------------------------------------------------------

namespace {

// Decodes one UTF-8 sequence at s[i]; invalid bytes come back as themselves.
uint32_t decode_utf8(const std::string& s, size_t& i) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) {
        ++i;
        return c;
    }
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
        if ((cc & 0xc0) != 0x80) {
            ++i;
            return c;
        }
        cp = (cp << 6) | (cc & 0x3f);
    }
    i += static_cast<size_t>(len);
    return cp;
}

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        char b[16];
        if (c == '"') { out += "\\\""; ++i; }
        else if (c == '\\') { out += "\\\\"; ++i; }
        else if (c == '\n') { out += "\\n"; ++i; }
        else if (c == '\r') { out += "\\r"; ++i; }
        else if (c == '\t') { out += "\\t"; ++i; }
        else if (c == '\b') { out += "\\b"; ++i; }
        else if (c == '\f') { out += "\\f"; ++i; }
        else if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
            ++i;
        } else if (c < 0x80 || !ensure_ascii) {
            out += static_cast<char>(c);
            ++i;
        } else {
            uint32_t cp = decode_utf8(s, i);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
            } else {
                std::snprintf(b, sizeof b, "\\u%04x", cp);
            }
            out += b;
        }
    }
    out += '"';
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return python_float_repr(d);
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
    if (level > 512) throw TemplateError("RecursionError", "maximum recursion depth exceeded while encoding a JSON object");
    auto newline = [&](int lvl) {
        if (!o.has_indent) return;
        out += '\n';
        for (int k = 0; k < lvl; ++k) out += o.indent_string;
    };
    switch (v.type()) {
        case Value::Type::None: out += "null"; return;
        case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Type::Int: out += std::to_string(v.as_int()); return;
        case Value::Type::Float: out += json_float(v.as_float()); return;
        case Value::Type::String: json_string(out, v.as_string(), o.ensure_ascii); return;
        case Value::Type::List: {
            if (v.is_generator()) break;
            const auto& items = v.as_list();
            if (items.empty()) { out += "[]"; return; }
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += o.item_separator;
                newline(level + 1);
                dump(out, items[i], o, level + 1);
            }
            newline(level);
            out += ']';
            return;
        }
        case Value::Type::Dict: {
            if (v.is_namespace()) break;
            const auto& d = v.as_dict();
            if (d.items.empty()) { out += "{}"; return; }
            std::vector<std::pair<std::string, const Value*>> entries;
            for (const auto& [k, val] : d.items) {
                std::string key;
                if (k.is_string()) key = k.as_string();
                else if (k.is_bool()) key = k.as_bool() ? "true" : "false";
                else if (k.is_int()) key = std::to_string(k.as_int());
                else if (k.is_float()) key = json_float(k.as_float());
                else if (k.is_none()) key = "null";
                else throw TemplateError("TypeError", "keys must be str, int, float, bool or None, not " + k.type_name());
                entries.emplace_back(std::move(key), &val);
            }
            if (o.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
            out += '{';
            for (size_t i = 0; i < entries.size(); ++i) {
                if (i) out += o.item_separator;
                newline(level + 1);
                json_string(out, entries[i].first, o.ensure_ascii);
                out += o.key_separator;
                dump(out, *entries[i].second, o, level + 1);
            }
            newline(level);
            out += '}';
            return;
        }
        default: break;
    }
    throw TemplateError("TypeError", "Object of type " + v.type_name() + " is not JSON serializable");
}

}  // namespace

std::string python_json_dumps(const Value& v, const JsonDumpOptions& options) {
    std::string out;
    dump(out, v, options, 0);
    return out;
}

}  // namespace cria::jinja
