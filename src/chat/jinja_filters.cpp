// Jinja2's built-in filters (jinja2/filters.py), plus `tojson` as Hugging Face
// defines it (json.dumps without HTML escaping, ensure_ascii=False).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "jinja_runtime.h"

namespace cria::jinja {

namespace {

using FilterFn = Value (*)(Renderer&, const Value&, Args&);

// Jinja2's attribute paths: "a.b.0" looks up a, then b, then item 0.
Value resolve_attribute(Renderer& r, const Value& item, const Value& attribute) {
    if (attribute.is_int()) return r.get_item(item, attribute);
    Value v = item;
    const std::string path = attribute.str();
    size_t b = 0;
    while (true) {
        const size_t e = path.find('.', b);
        const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        v = numeric ? r.get_item(v, Value(static_cast<int64_t>(std::stoll(part.substr(0, 18))))) : r.get_item(v, Value(part));
        if (e == std::string::npos) return v;
        b = e + 1;
    }
}

// Sort key with Jinja2's case_sensitive=False default: strings compare lowered.
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value(ascii_lower(v.as_string()));
    return v;
}

std::vector<Value> as_items(Renderer& r, const Value& v) { return r.iterate(v); }

Value f_tojson(Renderer&, const Value& v, Args& a) {
    JsonDumpOptions o;
    o.ensure_ascii = a.get(99, "ensure_ascii", Value(false)).truthy();
    o.sort_keys = a.get(99, "sort_keys", Value(false)).truthy();
    const Value indent = a.get(0, "indent", Value::none());
    if (!indent.is_none() && !indent.is_undefined()) {
        o.has_indent = true;
        if (indent.is_string()) o.indent_string = indent.as_string();
        else {
            const int64_t n = std::clamp<int64_t>(to_index(indent, "indent"), 0, 64);
            o.indent_string = std::string(static_cast<size_t>(n), ' ');
        }
        o.item_separator = ",";
    }
    const Value seps = a.get(99, "separators", Value::none());
    if (seps.is_list()) {
        if (seps.as_list().size() != 2) throw TemplateError("ValueError", "separators must be an (item_separator, key_separator) pair");
        o.item_separator = seps.as_list()[0].str();
        o.key_separator = seps.as_list()[1].str();
    }
    return Value(python_json_dumps(v, o));
}

Value f_length(Renderer&, const Value& v, Args&) {
    if (v.is_string()) return Value(static_cast<int64_t>(code_point_count(v.as_string())));
    if (v.is_list() && !v.is_generator()) return Value(static_cast<int64_t>(v.as_list().size()));
    if (v.is_dict() && !v.is_namespace()) return Value(static_cast<int64_t>(v.as_dict().size()));
    if (v.is_undefined()) return Value(int64_t{0});
    type_error("object of type '" + v.type_name() + "' has no len()");
}

Value f_default(Renderer&, const Value& v, Args& a) {
    const bool boolean = a.get(1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value(""));
    return v;
}

Value f_trim(Renderer&, const Value& v, Args& a) { return Value(python_strip(v.str(), a.get(0, "chars", Value::none()), true, true)); }
Value f_string(Renderer&, const Value& v, Args&) { return v.is_string() ? v : Value(v.str()); }
Value f_upper(Renderer&, const Value& v, Args&) { return Value(ascii_upper(v.str())); }
Value f_lower(Renderer&, const Value& v, Args&) { return Value(ascii_lower(v.str())); }
Value f_capitalize(Renderer&, const Value& v, Args&) { return Value(python_capitalize(v.str())); }
Value f_safe(Renderer&, const Value& v, Args&) {
    Value s = v.is_string() ? v : Value(v.str());
    return s.mark_safe();
}

Value f_title(Renderer&, const Value& v, Args&) {
    // Words begin after runs of whitespace, '-', and opening brackets.
    const std::string s = v.str();
    std::string out;
    bool at_start = true;
    for (char c : s) {
        const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' || c == '(' ||
                         c == '{' || c == '[' || c == '<';
        if (sep) {
            out += c;
            at_start = true;
        } else if (at_start) {
            out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
            at_start = false;
        } else {
            out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
        }
    }
    return Value(out);
}

Value f_join(Renderer& r, const Value& v, Args& a) {
    const std::string sep = a.get(0, "d", Value("")).str();
    const Value attribute = a.get(1, "attribute", Value::none());
    std::string out;
    bool first = true;
    for (const auto& item : as_items(r, v)) {
        if (!first) out += sep;
        first = false;
        out += (attribute.is_none() ? item : resolve_attribute(r, item, attribute)).str();
        r.check_size(out.size());
    }
    return Value(out);
}

Value f_first(Renderer& r, const Value& v, Args&) {
    ValueList items = as_items(r, v);
    if (items.empty()) return Value::undefined("", "No first item, sequence was empty.");
    return items.front();
}
Value f_last(Renderer& r, const Value& v, Args&) {
    ValueList items = as_items(r, v);
    if (items.empty()) return Value::undefined("", "No last item, sequence was empty.");
    return items.back();
}
Value f_list(Renderer& r, const Value& v, Args&) { return Value::list(as_items(r, v)); }

Value f_reverse(Renderer& r, const Value& v, Args&) {
    if (v.is_string()) {
        auto cps = code_points(v.as_string());
        std::string out;
        for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
        return Value(out);
    }
    ValueList items = as_items(r, v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items)).mark_generator();  // Python's reversed() is an iterator
}

Value f_int(Renderer&, const Value& v, Args& a) {
    const Value fallback = a.get(0, "default", Value(int64_t{0}));
    if (v.is_int()) return v;
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    if (v.is_float()) {
        if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return fallback;
        return Value(static_cast<int64_t>(v.as_float()));
    }
    if (v.is_string()) {
        const std::string s = python_strip(v.as_string(), Value::none(), true, true);
        const int base = static_cast<int>(std::clamp<int64_t>(a.get(1, "base", Value(int64_t{10})).is_int() ? a.get(1, "base").as_int() : 10, 2, 36));
        std::string digits;
        for (char c : s)
            if (c != '_') digits += c;
        if (!digits.empty()) {
            char* end = nullptr;
            errno = 0;
            const long long x = std::strtoll(digits.c_str(), &end, base);
            if (end && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(x));
            const double d = std::strtod(digits.c_str(), &end);
            if (end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
        }
    }
    return fallback;
}

Value f_float(Renderer&, const Value& v, Args& a) {
    const Value fallback = a.get(0, "default", Value(0.0));
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
        const std::string s = python_strip(v.as_string(), Value::none(), true, true);
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == '\0') return Value(d);
    }
    return fallback;
}

Value f_abs(Renderer&, const Value& v, Args&) {
    if (v.is_int()) {
        if (v.as_int() == INT64_MIN) throw TemplateError("OverflowError", "integer overflow");
        return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_undefined()) Renderer::raise_undefined(v);
    type_error("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Renderer&, const Value& v, Args& a) {
    const int64_t precision = std::clamp<int64_t>(a.get(0, "precision", Value(int64_t{0})).is_int() ? a.get(0, "precision").as_int() : 0, -300, 300);
    const std::string method = a.get(1, "method", Value("common")).str();
    if (v.is_undefined()) Renderer::raise_undefined(v);
    if (!v.is_number()) type_error("type " + v.type_name() + " doesn't define __round__ method");
    const double x = v.as_float();
    const double scale = std::pow(10.0, static_cast<double>(precision));
    double r;
    if (method == "common") {
        r = std::nearbyint(x * scale) / scale;  // round-half-even as Python's round()
        if (v.is_int() || v.is_bool()) return v.is_bool() ? Value(static_cast<int64_t>(v.as_bool())) : v;
    } else if (method == "floor") r = std::floor(x * scale) / scale;
    else if (method == "ceil") r = std::ceil(x * scale) / scale;
    else throw TemplateError("FilterArgumentError", "method must be common, ceil or floor");
    return Value(r);
}

Value f_replace(Renderer& r, const Value& v, Args& a) {
    const std::string out = python_replace(v.str(), a.get(0, "old").str(), a.get(1, "new").str(),
                                           a.get(2, "count", Value::none()).is_int() ? a.get(2, "count").as_int() : -1);
    r.check_size(out.size());
    return Value(out);
}

Value f_indent(Renderer&, const Value& v, Args& a) {
    const Value width = a.get(0, "width", Value(int64_t{4}));
    const bool first = a.get(1, "first", Value(false)).truthy();
    const bool blank = a.get(2, "blank", Value(false)).truthy();
    const std::string ind = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(std::clamp<int64_t>(width.is_int() ? width.as_int() : 4, 0, 1024)), ' ');
    const std::string s = v.str() + "\n";
    std::vector<std::string> lines;
    for (const auto& l : python_split(s, Value("\n"), -1, false)) lines.push_back(l.as_string());
    lines.pop_back();  // the part after the final "\n" (splitlines drops it)
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
    }
    if (first) rv = ind + rv;
    return Value(rv);
}

Value f_items(Renderer&, const Value& v, Args&) {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
    ValueList out;
    for (const auto& [k, x] : v.as_dict().items) out.push_back(Value::tuple({k, x}));
    return Value::list(std::move(out));
}

Value f_dictsort(Renderer&, const Value& v, Args& a) {
    if (!v.is_dict()) type_error("dictsort: value must be a mapping");
    const bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
    const std::string by = a.get(1, "by", Value("key")).str();
    const bool reverse = a.get(2, "reverse", Value(false)).truthy();
    const size_t pos = by == "key" ? 0 : by == "value" ? 1 : 2;
    if (pos == 2) throw TemplateError("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
    ValueList out;
    for (const auto& [k, x] : v.as_dict().items) out.push_back(Value::tuple({k, x}));
    std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
        const int c = python_compare(sort_key(x.as_list()[pos], cs), sort_key(y.as_list()[pos], cs));
        return reverse ? c > 0 : c < 0;
    });
    return Value::list(std::move(out));
}

Value f_sort(Renderer& r, const Value& v, Args& a) {
    const bool reverse = a.get(0, "reverse", Value(false)).truthy();
    const bool cs = a.get(1, "case_sensitive", Value(false)).truthy();
    const Value attribute = a.get(2, "attribute", Value::none());
    ValueList items = as_items(r, v);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& it : items) keyed.emplace_back(sort_key(attribute.is_none() ? it : resolve_attribute(r, it, attribute), cs), it);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        const int c = python_compare(x.first, y.first);
        return reverse ? c > 0 : c < 0;
    });
    ValueList out;
    for (auto& k : keyed) out.push_back(k.second);
    return Value::list(std::move(out));
}

Value f_unique(Renderer& r, const Value& v, Args& a) {
    const bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
    const Value attribute = a.get(1, "attribute", Value::none());
    ValueList seen, out;
    for (const auto& it : as_items(r, v)) {
        Value key = sort_key(attribute.is_none() ? it : resolve_attribute(r, it, attribute), cs);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
        seen.push_back(key);
        out.push_back(it);
    }
    return Value::list(std::move(out)).mark_generator();
}

Value min_max(Renderer& r, const Value& v, Args& a, bool want_max) {
    const bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
    const Value attribute = a.get(1, "attribute", Value::none());
    ValueList items = as_items(r, v);
    if (items.empty()) return Value::undefined("", "No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        const Value x = sort_key(attribute.is_none() ? items[i] : resolve_attribute(r, items[i], attribute), cs);
        const Value y = sort_key(attribute.is_none() ? items[best] : resolve_attribute(r, items[best], attribute), cs);
        const int c = python_compare(x, y);
        if (want_max ? c > 0 : c < 0) best = i;
    }
    return items[best];
}
Value f_min(Renderer& r, const Value& v, Args& a) { return min_max(r, v, a, false); }
Value f_max(Renderer& r, const Value& v, Args& a) { return min_max(r, v, a, true); }

Value f_sum(Renderer& r, const Value& v, Args& a) {
    const Value attribute = a.get(0, "attribute", Value::none());
    Value total = a.get(1, "start", Value(int64_t{0}));
    for (const auto& it : as_items(r, v)) {
        const Value x = attribute.is_none() ? it : resolve_attribute(r, it, attribute);
        if (!x.is_number() || !total.is_number()) type_error("unsupported operand type(s) for +: '" + total.type_name() + "' and '" + x.type_name() + "'");
        if ((total.is_int() || total.is_bool()) && (x.is_int() || x.is_bool())) {
            int64_t s;
            const int64_t p = total.is_bool() ? total.as_bool() : total.as_int(), q = x.is_bool() ? x.as_bool() : x.as_int();
            if (__builtin_add_overflow(p, q, &s)) throw TemplateError("OverflowError", "integer overflow");
            total = Value(s);
        } else {
            total = Value(total.as_float() + x.as_float());
        }
    }
    return total;
}

Value f_batch(Renderer& r, const Value& v, Args& a) {
    const int64_t n = a.get(0, "linecount").is_int() ? a.get(0, "linecount").as_int() : 0;
    if (n <= 0) throw TemplateError("ValueError", "batch size must be positive");
    const Value fill = a.get(1, "fill_with", Value::none());
    ValueList out, cur;
    for (const auto& it : as_items(r, v)) {
        cur.push_back(it);
        if (static_cast<int64_t>(cur.size()) == n) {
            out.push_back(Value::list(std::move(cur)));
            cur.clear();
        }
    }
    if (!cur.empty()) {
        if (!fill.is_none()) while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
        out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out)).mark_generator();
}

Value f_wordcount(Renderer&, const Value& v, Args&) {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : v.str()) {
        const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value(n);
}

Value f_escape(Renderer&, const Value& v, Args&) { return Value(html_escape(v)).mark_safe(); }

Value f_center(Renderer& r, const Value& v, Args& a) {
    const int64_t width = a.get(0, "width", Value(int64_t{80})).is_int() ? a.get(0, "width").as_int() : 80;
    const std::string s = v.str();
    const auto n = static_cast<int64_t>(code_point_count(s));
    if (width <= n) return Value(s);
    r.check_size(static_cast<size_t>(width));
    const size_t pad = static_cast<size_t>(width - n);
    const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
    return Value(std::string(left, ' ') + s + std::string(pad - left, ' '));
}

Value f_attr(Renderer& r, const Value& v, Args& a) { return r.get_attr(v, a.get(0, "name").str()); }

Value f_format(Renderer& r, const Value& v, Args& a) {
    Value args = a.positional.size() == 1 ? a.positional[0] : Value::tuple(a.positional);
    if (a.positional.size() == 1 && a.positional[0].is_tuple()) args = Value::tuple({a.positional[0]});
    (void)r;
    std::string fmt = v.str();
    ValueList list = args.is_tuple() ? args.as_list() : ValueList{args};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) throw TemplateError("ValueError", "incomplete format");
        if (fmt[i] == '%') {
            out += '%';
            continue;
        }
        if (next >= list.size()) type_error("not enough arguments for format string");
        const Value& x = list[next++];
        if (fmt[i] == 's') out += x.str();
        else if (fmt[i] == 'r') out += x.repr();
        else if (fmt[i] == 'd' || fmt[i] == 'i') {
            if (!x.is_number()) type_error("%d format: a real number is required, not " + x.type_name());
            out += std::to_string(x.is_float() ? static_cast<int64_t>(x.as_float()) : x.is_bool() ? x.as_bool() : x.as_int());
        } else throw TemplateError("ValueError", std::string("unsupported format character '") + fmt[i] + "'");
    }
    return Value(out);
}

// select/reject/selectattr/rejectattr and map: Jinja2 returns generators.
Value select_like(Renderer& r, const Value& v, Args& a, bool with_attr, bool keep_when) {
    size_t argi = 0;
    Value attribute;
    if (with_attr) attribute = a.get(argi++, "attr");
    const bool has_test = a.positional.size() > argi;
    const std::string test_name = has_test ? a.positional[argi].str() : "";
    Args test_args;
    test_args.renderer = &r;
    for (size_t i = argi + 1; i < a.positional.size(); ++i) test_args.positional.push_back(a.positional[i]);
    ValueList out;
    if (!v.truthy()) return Value::list().mark_generator();  // Jinja2: `if value:` guards the loop
    for (const auto& it : as_items(r, v)) {
        r.step();
        const Value x = with_attr ? resolve_attribute(r, it, attribute) : it;
        const bool pass = has_test ? r.test(test_name, x, test_args, r.line) : x.truthy();
        if (pass == keep_when) out.push_back(it);
    }
    return Value::list(std::move(out)).mark_generator();
}
Value f_select(Renderer& r, const Value& v, Args& a) { return select_like(r, v, a, false, true); }
Value f_reject(Renderer& r, const Value& v, Args& a) { return select_like(r, v, a, false, false); }
Value f_selectattr(Renderer& r, const Value& v, Args& a) { return select_like(r, v, a, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, Args& a) { return select_like(r, v, a, true, false); }

Value f_map(Renderer& r, const Value& v, Args& a) {
    ValueList out;
    bool by_attr = false;
    Value attribute, fallback;
    for (const auto& [k, x] : a.keyword) {
        if (k == "attribute") {
            by_attr = true;
            attribute = x;
        } else if (k == "default") {
            fallback = x;
        }
    }
    if (!by_attr && a.positional.empty()) throw TemplateError("FilterArgumentError", "map requires a filter argument");
    if (!v.truthy()) return Value::list().mark_generator();  // Jinja2: `if value:` guards the loop
    for (const auto& it : as_items(r, v)) {
        r.step();
        if (by_attr) {
            Value x = resolve_attribute(r, it, attribute);
            if (x.is_undefined() && a.has(99, "default")) x = fallback;
            out.push_back(x);
        } else {
            Args fa;
            fa.renderer = &r;
            for (size_t i = 1; i < a.positional.size(); ++i) fa.positional.push_back(a.positional[i]);
            fa.keyword = a.keyword;
            out.push_back(r.filter(a.positional[0].str(), it, fa, r.line));
        }
    }
    return Value::list(std::move(out)).mark_generator();
}

struct NamedFilter {
    const char* name;
    FilterFn fn;
};

const NamedFilter kFilters[] = {
    {"tojson", f_tojson},       {"length", f_length},         {"count", f_length},       {"default", f_default},
    {"d", f_default},           {"trim", f_trim},             {"string", f_string},      {"upper", f_upper},
    {"lower", f_lower},         {"capitalize", f_capitalize}, {"safe", f_safe},          {"title", f_title},
    {"join", f_join},           {"first", f_first},           {"last", f_last},          {"list", f_list},
    {"reverse", f_reverse},     {"int", f_int},               {"float", f_float},        {"abs", f_abs},
    {"round", f_round},         {"replace", f_replace},       {"indent", f_indent},      {"items", f_items},
    {"dictsort", f_dictsort},   {"sort", f_sort},             {"unique", f_unique},      {"min", f_min},
    {"max", f_max},             {"sum", f_sum},               {"batch", f_batch},        {"wordcount", f_wordcount},
    {"e", f_escape},            {"escape", f_escape},         {"forceescape", f_escape}, {"center", f_center},
    {"attr", f_attr},           {"format", f_format},         {"select", f_select},      {"reject", f_reject},
    {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr}, {"map", f_map},
};

FilterFn find_filter(const std::string& name) {
    for (const auto& f : kFilters)
        if (name == f.name) return f.fn;
    return nullptr;
}

}  // namespace

bool has_builtin_filter(const std::string& name) { return find_filter(name) != nullptr; }

Value builtin_filter(Renderer& r, const std::string& name, const Value& input, Args& args) {
    const FilterFn fn = find_filter(name);
    if (!fn) return Value();
    return fn(r, input, args);
}

}  // namespace cria::jinja
