// Methods of Python's str, dict and list that templates call (`s.strip()`,
// `d.get(k)`), and the global functions (range, dict, namespace, cycler,
// joiner). As in Hugging Face's ImmutableSandboxedEnvironment, methods that
// would mutate a list or dict are refused with a SecurityError.

#include <algorithm>
#include <set>

#include "jinja_runtime.h"

namespace cria::jinja {

namespace {

bool py_space(const std::string& cp) {
    if (cp.size() == 1) {
        const char c = cp[0];
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || (c >= 0x1c && c <= 0x1f);
    }
    // Unicode whitespace Python strips: NBSP, NEL, the U+2000 block, etc.
    static const std::set<std::string> unicode_space = {
        "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83",
        "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88", "\xe2\x80\x89", "\xe2\x80\x8a",
        "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
    return unicode_space.count(cp) > 0;
}

const std::string& want_string(const Value& v, const char* method) {
    if (!v.is_string()) type_error(std::string(method) + " arg must be None or str, not " + v.type_name());
    return v.as_string();
}

}  // namespace

std::string python_strip(const std::string& s, const Value& chars, bool left, bool right) {
    auto cps = code_points(s);
    std::set<std::string> set;
    const bool whitespace = chars.is_none() || chars.is_undefined();
    if (!whitespace)
        for (auto& c : code_points(want_string(chars, "strip"))) set.insert(c);
    auto strip_it = [&](const std::string& c) { return whitespace ? py_space(c) : set.count(c) > 0; };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strip_it(cps[b])) ++b;
    if (right)
        while (e > b && strip_it(cps[e - 1])) --e;
    std::string out;
    for (size_t i = b; i < e; ++i) out += cps[i];
    return out;
}

ValueList python_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
    ValueList out;
    if (sep.is_none() || sep.is_undefined()) {
        auto cps = code_points(s);
        std::vector<std::string> words;
        if (!from_right) {
            size_t i = 0;
            while (i < cps.size()) {
                while (i < cps.size() && py_space(cps[i])) ++i;
                if (i >= cps.size()) break;
                if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
                    std::string rest;
                    size_t e = cps.size();
                    while (e > i && py_space(cps[e - 1])) --e;
                    for (size_t k = i; k < e; ++k) rest += cps[k];
                    words.push_back(rest);
                    break;
                }
                std::string w;
                while (i < cps.size() && !py_space(cps[i])) w += cps[i++];
                words.push_back(w);
            }
        } else {
            size_t i = cps.size();
            while (i > 0) {
                while (i > 0 && py_space(cps[i - 1])) --i;
                if (i == 0) break;
                if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
                    std::string rest;
                    size_t b = 0;
                    while (b < i && py_space(cps[b])) ++b;
                    for (size_t k = b; k < i; ++k) rest += cps[k];
                    words.push_back(rest);
                    break;
                }
                size_t e = i;
                while (i > 0 && !py_space(cps[i - 1])) --i;
                std::string w;
                for (size_t k = i; k < e; ++k) w += cps[k];
                words.push_back(w);
            }
            std::reverse(words.begin(), words.end());
        }
        for (auto& w : words) out.emplace_back(std::move(w));
        return out;
    }
    const std::string& d = want_string(sep, "split");
    if (d.empty()) throw TemplateError("ValueError", "empty separator");
    std::vector<std::string> parts;
    if (!from_right) {
        size_t pos = 0;
        while (true) {
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) break;
            const size_t f = s.find(d, pos);
            if (f == std::string::npos) break;
            parts.push_back(s.substr(pos, f - pos));
            pos = f + d.size();
        }
        parts.push_back(s.substr(pos));
    } else {
        size_t end = s.size();
        while (true) {
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) break;
            if (end < d.size()) break;
            const size_t f = s.rfind(d, end - d.size());
            if (f == std::string::npos) break;
            parts.push_back(s.substr(f + d.size(), end - f - d.size()));
            end = f;
        }
        parts.push_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    for (auto& p : parts) out.emplace_back(std::move(p));
    return out;
}

std::string python_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
    std::string out;
    if (old.empty()) {
        auto cps = code_points(s);
        int64_t done = 0;
        for (size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || done < count) {
                out += rep;
                ++done;
            }
            if (i < cps.size()) out += cps[i];
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t f = s.find(old, pos);
        if (f == std::string::npos) break;
        out += s.substr(pos, f - pos);
        out += rep;
        pos = f + old.size();
        ++done;
    }
    return out + s.substr(pos);
}

std::string ascii_upper(std::string s) {
    for (auto& c : s)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return s;
}
std::string ascii_lower(std::string s) {
    for (auto& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
}

std::string python_capitalize(const std::string& s) {
    std::string out = ascii_lower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
    return out;
}

// str.title(): a letter after a non-letter is upper-cased, others lowered.
std::string python_title(const std::string& s) {
    std::string out = s;
    bool prev_cased = false;
    for (auto& c : out) {
        const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
        if (lower || upper) {
            if (!prev_cased && lower) c = static_cast<char>(c - 32);
            if (prev_cased && upper) c = static_cast<char>(c + 32);
            prev_cased = true;
        } else {
            prev_cased = static_cast<unsigned char>(c) >= 0x80 && prev_cased;
        }
    }
    return out;
}

// str.format(): {} {0} {name} {0.attr} {name[key]}, !r/!s and a few specs.
std::string python_format(Renderer& r, const std::string& fmt, const Args& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        const char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            throw TemplateError("ValueError", "Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        const size_t close = fmt.find('}', i);
        if (close == std::string::npos) throw TemplateError("ValueError", "Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close;
        std::string spec, conversion;
        if (const size_t colon = field.find(':'); colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        if (const size_t bang = field.find('!'); bang != std::string::npos) {
            conversion = field.substr(bang + 1);
            field.resize(bang);
        }
        size_t name_end = field.find_first_of(".[");
        std::string head = field.substr(0, name_end);
        Value v;
        if (head.empty()) {
            v = args.get(auto_index++, "\x01");
            if (!args.has(auto_index - 1, "\x01")) throw TemplateError("IndexError", "Replacement index " + std::to_string(auto_index - 1) + " out of range for positional args tuple");
        } else if (std::all_of(head.begin(), head.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            const size_t idx = std::stoul(head);
            if (idx >= args.positional.size()) throw TemplateError("IndexError", "Replacement index " + head + " out of range for positional args tuple");
            v = args.positional[idx];
        } else {
            bool found = false;
            for (const auto& [k, kv] : args.keyword)
                if (k == head) {
                    v = kv;
                    found = true;
                }
            if (!found) throw TemplateError("KeyError", "'" + head + "'");
        }
        while (name_end != std::string::npos && name_end < field.size()) {
            if (field[name_end] == '.') {
                const size_t e = field.find_first_of(".[", name_end + 1);
                v = r.get_attr(v, field.substr(name_end + 1, e == std::string::npos ? std::string::npos : e - name_end - 1));
                name_end = e;
            } else {
                const size_t e = field.find(']', name_end);
                if (e == std::string::npos) throw TemplateError("ValueError", "Missing ']' in format string");
                const std::string key = field.substr(name_end + 1, e - name_end - 1);
                const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
                v = r.get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
                name_end = e + 1;
            }
        }
        if (v.is_undefined()) Renderer::raise_undefined(v);
        std::string text = conversion == "r" ? v.repr() : v.str();
        if (!spec.empty()) {
            // Alignment and width only ([[fill]align][width]); enough for padding tables.
            char fill = ' ', align = v.is_number() ? '>' : '<';
            size_t p = 0;
            if (spec.size() >= 2 && (spec[1] == '<' || spec[1] == '>' || spec[1] == '^')) {
                fill = spec[0];
                align = spec[1];
                p = 2;
            } else if (spec[0] == '<' || spec[0] == '>' || spec[0] == '^') {
                align = spec[0];
                p = 1;
            }
            const std::string width_text = spec.substr(p);
            if (width_text.empty() || !std::all_of(width_text.begin(), width_text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
                width_text.size() > 6)
                throw TemplateError("ValueError", "unsupported format spec '" + spec + "'");
            const size_t width = std::stoul(width_text);
            const size_t n = code_point_count(text);
            if (n < width) {
                const size_t pad = width - n;
                if (align == '<') text += std::string(pad, fill);
                else if (align == '>') text = std::string(pad, fill) + text;
                else text = std::string(pad / 2, fill) + text + std::string(pad - pad / 2, fill);
            }
        }
        out += text;
    }
    return out;
}

namespace {

Value unsafe(const Value& obj, const std::string& name) {
    return Value::undefined(name, "access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
}

Value method(const std::string& name, std::function<Value(Args&)> fn) { return Value::callable(name, std::move(fn)); }

int64_t int_arg(const Value& v, int64_t fallback) {
    if (v.is_undefined() || v.is_none()) return fallback;
    return to_index(v, "slice");
}

// Python's start/end arguments of find/count/startswith: a code point range.
std::string substring(const std::string& s, const Args& a, size_t first_arg) {
    if (!a.has(first_arg, "start") && !a.has(first_arg + 1, "end")) return s;
    return python_slice(Value(s), a.get(first_arg, "start", Value::none()), a.get(first_arg + 1, "end", Value::none()), Value::none()).as_string();
}

Value string_method(Renderer& r, const Value& obj, const std::string& name) {
    const std::string s = obj.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return method(name, [s, name](Args& a) {
            return Value(python_strip(s, a.get(0, "chars", Value::none()), name != "rstrip", name != "lstrip"));
        });
    if (name == "split" || name == "rsplit")
        return method(name, [s, name](Args& a) {
            return Value::list(python_split(s, a.get(0, "sep", Value::none()), int_arg(a.get(1, "maxsplit"), -1), name == "rsplit"));
        });
    if (name == "startswith" || name == "endswith")
        return method(name, [s, name](Args& a) {
            const Value p = a.get(0, "prefix");
            const std::string sub = substring(s, a, 1);
            ValueList options = p.is_tuple() ? p.as_list() : ValueList{p};
            for (const auto& o : options) {
                if (!o.is_string()) type_error(name + " first arg must be str or a tuple of str, not " + o.type_name());
                const std::string& x = o.as_string();
                if (x.size() > sub.size()) continue;
                if (name == "startswith" ? sub.compare(0, x.size(), x) == 0 : sub.compare(sub.size() - x.size(), x.size(), x) == 0)
                    return Value(true);
            }
            return Value(false);
        });
    if (name == "replace")
        return method(name, [s](Args& a) {
            const Value o = a.get(0, "old"), n = a.get(1, "new");
            if (!o.is_string() || !n.is_string()) type_error("replace() argument must be str");
            return Value(python_replace(s, o.as_string(), n.as_string(), int_arg(a.get(2, "count"), -1)));
        });
    if (name == "upper") return method(name, [s](Args&) { return Value(ascii_upper(s)); });
    if (name == "lower" || name == "casefold") return method(name, [s](Args&) { return Value(ascii_lower(s)); });
    if (name == "title") return method(name, [s](Args&) { return Value(python_title(s)); });
    if (name == "capitalize") return method(name, [s](Args&) { return Value(python_capitalize(s)); });
    if (name == "swapcase")
        return method(name, [s](Args&) {
            std::string o = s;
            for (auto& c : o) {
                if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
                else if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
            }
            return Value(o);
        });
    if (name == "format") return method(name, [s, &r](Args& a) { return Value(python_format(r, s, a)); });
    if (name == "join")
        return method(name, [s](Args& a) {
            ValueList items = a.renderer->iterate(a.get(0, "iterable"));
            std::string out;
            for (size_t i = 0; i < items.size(); ++i) {
                if (!items[i].is_string())
                    type_error("sequence item " + std::to_string(i) + ": expected str instance, " + items[i].type_name() + " found");
                if (i) out += s;
                out += items[i].as_string();
                a.renderer->check_size(out.size());
            }
            return Value(out);
        });
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count")
        return method(name, [s, name](Args& a) {
            const Value sub_v = a.get(0, "sub");
            if (!sub_v.is_string()) type_error("must be str, not " + sub_v.type_name());
            const std::string& sub = sub_v.as_string();
            const int64_t start_cp = a.has(1, "start") ? int_arg(a.get(1, "start"), 0) : 0;
            const std::string hay = substring(s, a, 1);
            const int64_t n = static_cast<int64_t>(code_point_count(s));
            const int64_t offset = a.has(1, "start") ? std::clamp<int64_t>(start_cp < 0 ? start_cp + n : start_cp, 0, n) : 0;
            if (name == "count") {
                if (sub.empty()) return Value(static_cast<int64_t>(code_point_count(hay)) + 1);
                int64_t c = 0;
                for (size_t p = hay.find(sub); p != std::string::npos; p = hay.find(sub, p + sub.size())) ++c;
                return Value(c);
            }
            const size_t p = (name[0] == 'r') ? hay.rfind(sub) : hay.find(sub);
            if (p == std::string::npos) {
                if (name == "index" || name == "rindex") throw TemplateError("ValueError", "substring not found");
                return Value(int64_t{-1});
            }
            return Value(offset + static_cast<int64_t>(code_point_count(hay.substr(0, p))));
        });
    if (name == "splitlines")
        return method(name, [s](Args& a) {
            const bool keep = a.get(0, "keepends", Value(false)).truthy();
            ValueList out;
            size_t b = 0;
            for (size_t i = 0; i < s.size(); ++i) {
                const char c = s[i];
                if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
                    size_t e = i + 1;
                    if (c == '\r' && e < s.size() && s[e] == '\n') ++e;
                    out.emplace_back(s.substr(b, (keep ? e : i) - b));
                    b = e;
                    i = e - 1;
                }
            }
            if (b < s.size()) out.emplace_back(s.substr(b));
            return Value::list(std::move(out));
        });
    if (name == "removeprefix" || name == "removesuffix")
        return method(name, [s, name](Args& a) {
            const std::string& x = want_string(a.get(0, "prefix"), name.c_str());
            if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
            if (name == "removesuffix" && !x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
                return Value(s.substr(0, s.size() - x.size()));
            return Value(s);
        });
    auto predicate = [&](auto test) {
        return method(name, [s, test](Args&) {
            if (s.empty()) return Value(false);
            for (unsigned char c : s)
                if (!test(c)) return Value(false);
            return Value(true);
        });
    };
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return predicate([](unsigned char c) { return c >= '0' && c <= '9'; });
    if (name == "isalpha") return predicate([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
    if (name == "isalnum") return predicate([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
    if (name == "isspace") return predicate([](unsigned char c) { return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f); });
    if (name == "islower" || name == "isupper")
        return method(name, [s, name](Args&) {
            bool cased = false;
            for (unsigned char c : s) {
                if (std::islower(c)) {
                    if (name == "isupper") return Value(false);
                    cased = true;
                } else if (std::isupper(c)) {
                    if (name == "islower") return Value(false);
                    cased = true;
                }
            }
            return Value(cased);
        });
    if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust")
        return method(name, [s, name](Args& a) {
            const int64_t width = int_arg(a.get(0, "width"), 0);
            const auto n = static_cast<int64_t>(code_point_count(s));
            if (width <= n) return Value(s);
            a.renderer->check_size(static_cast<size_t>(width));
            const size_t pad = static_cast<size_t>(width - n);
            std::string fill = name == "zfill" ? "0" : a.get(1, "fillchar", Value(" ")).str();
            auto rep = [&](size_t k) {
                std::string o;
                for (size_t i = 0; i < k; ++i) o += fill;
                return o;
            };
            if (name == "zfill") {
                if (!s.empty() && (s[0] == '-' || s[0] == '+')) return Value(s.substr(0, 1) + rep(pad) + s.substr(1));
                return Value(rep(pad) + s);
            }
            if (name == "ljust") return Value(s + rep(pad));
            if (name == "rjust") return Value(rep(pad) + s);
            const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
            return Value(rep(left) + s + rep(pad - left));
        });
    return Value();
}

Value dict_method(const Value& obj, const std::string& name) {
    if (name == "get")
        return method(name, [obj](Args& a) {
            const Value* v = obj.as_dict().find(a.get(0, "key"));
            return v ? *v : a.get(1, "default", Value::none());
        });
    if (name == "items")
        return method(name, [obj](Args&) {
            ValueList out;
            for (const auto& [k, v] : obj.as_dict().items) out.push_back(Value::tuple({k, v}));
            return Value::list(std::move(out));
        });
    if (name == "keys" || name == "values")
        return method(name, [obj, name](Args&) {
            ValueList out;
            for (const auto& [k, v] : obj.as_dict().items) out.push_back(name == "keys" ? k : v);
            return Value::list(std::move(out));
        });
    if (name == "copy")
        return method(name, [obj](Args&) {
            Value d = Value::dict();
            d.as_dict().items = obj.as_dict().items;
            return d;
        });
    if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" || name == "clear") return unsafe(obj, name);
    return Value();
}

Value list_method(const Value& obj, const std::string& name) {
    if (name == "index" || name == "count")
        return method(name, [obj, name](Args& a) {
            const Value x = a.get(0, "value");
            int64_t count = 0;
            const auto& items = obj.as_list();
            for (size_t i = 0; i < items.size(); ++i) {
                if (!items[i].equals(x)) continue;
                if (name == "index") return Value(static_cast<int64_t>(i));
                ++count;
            }
            if (name == "index") throw TemplateError("ValueError", x.repr() + " is not in list");
            return Value(count);
        });
    if (obj.is_tuple()) return Value();
    if (name == "append" || name == "pop" || name == "insert" || name == "extend" || name == "remove" || name == "clear" ||
        name == "sort" || name == "reverse")
        return unsafe(obj, name);
    return Value();
}

}  // namespace

Value builtin_method(Renderer& r, const Value& obj, const std::string& name) {
    if (obj.is_string()) return string_method(r, obj, name);
    if (obj.is_dict() && !obj.is_namespace()) return dict_method(obj, name);
    if (obj.is_list() && !obj.is_generator()) return list_method(obj, name);
    return Value();
}

// --- globals ---------------------------------------------------------------------

void add_builtin_globals(Dict& g) {
    g.set(Value("range"), Value::callable("range", [](Args& a) {
              if (a.positional.empty() || a.positional.size() > 3) type_error("range expected at least 1 argument, got 0");
              for (const auto& v : a.positional)
                  if (!v.is_int() && !v.is_bool()) type_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
              int64_t start = 0, stop, step = 1;
              if (a.positional.size() == 1) stop = to_index(a.positional[0], "range");
              else {
                  start = to_index(a.positional[0], "range");
                  stop = to_index(a.positional[1], "range");
                  if (a.positional.size() == 3) step = to_index(a.positional[2], "range");
              }
              if (step == 0) throw TemplateError("ValueError", "range() arg 3 must not be zero");
              ValueList out;
              const long double count = (static_cast<long double>(stop) - start) / step;
              if (count > 0) a.renderer->check_size(static_cast<size_t>(std::min<long double>(count, 1e18L)));
              for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                  out.emplace_back(i);
                  if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
              }
              return Value::list(std::move(out));
          }));
    g.set(Value("dict"), Value::callable("dict", [](Args& a) {
              Value d = Value::dict();
              if (!a.positional.empty()) {
                  const Value& src = a.positional[0];
                  if (src.is_dict()) d.as_dict().items = src.as_dict().items;
                  else
                      for (const auto& pair : a.renderer->iterate(src)) {
                          ValueList kv = a.renderer->iterate(pair);
                          if (kv.size() != 2) throw TemplateError("ValueError", "dictionary update sequence element has wrong length");
                          d.as_dict().set(kv[0], kv[1]);
                      }
              }
              for (const auto& [k, v] : a.keyword) d.as_dict().set(Value(k), v);
              return d;
          }));
    g.set(Value("namespace"), Value::callable("namespace", [](Args& a) {
              Value ns = Value::dict();
              ns.mark_namespace();
              for (const auto& p : a.positional) {
                  if (!p.is_dict()) type_error("namespace() takes mappings");
                  for (const auto& [k, v] : p.as_dict().items) ns.as_dict().set(k, v);
              }
              for (const auto& [k, v] : a.keyword) ns.as_dict().set(Value(k), v);
              return ns;
          }));
    g.set(Value("joiner"), Value::callable("joiner", [](Args& a) {
              const std::string sep = a.get(0, "sep", Value(", ")).str();
              auto used = std::make_shared<bool>(false);
              return Value::callable("joiner", [sep, used](Args&) {
                  if (!*used) {
                      *used = true;
                      return Value("");
                  }
                  return Value(sep);
              });
          }));
    g.set(Value("cycler"), Value::callable("cycler", [](Args& a) {
              if (a.positional.empty()) type_error("at least one item has to be provided");
              Value c = Value::dict();
              c.mark_namespace();
              auto items = std::make_shared<ValueList>(a.positional);
              auto pos = std::make_shared<size_t>(0);
              c.as_dict().set(Value("next"), Value::callable("next", [items, pos](Args&) {
                                  Value v = (*items)[*pos];
                                  *pos = (*pos + 1) % items->size();
                                  return v;
                              }));
              c.as_dict().set(Value("reset"), Value::callable("reset", [pos](Args&) {
                                  *pos = 0;
                                  return Value::none();
                              }));
              c.as_dict().set(Value("current"), (*items)[0]);
              return c;
          }));
}

}  // namespace cria::jinja
