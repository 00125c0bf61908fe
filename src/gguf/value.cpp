// Metadata values: construction, typed access, equality and display.

#include "cria/gguf/value.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "cria/core/error.h"

namespace cria::gguf {

namespace {

// The variant alternative that holds elements of each type id (BOOL shares U8's).
size_t storage_index(ValueType t) {
    switch (t) {
        case ValueType::U8: case ValueType::BOOL: return 0;
        case ValueType::I8: return 1;
        case ValueType::U16: return 2;
        case ValueType::I16: return 3;
        case ValueType::U32: return 4;
        case ValueType::I32: return 5;
        case ValueType::F32: return 6;
        case ValueType::U64: return 7;
        case ValueType::I64: return 8;
        case ValueType::F64: return 9;
        case ValueType::STRING: return 10;
        case ValueType::ARRAY: return 11;
    }
    return std::variant_npos;
}

template <class T>
std::span<const T> typed_span(const std::shared_ptr<const Value::ArrayStorage>& a) {
    if (!a) return {};
    if (const auto* v = std::get_if<std::vector<T>>(a.get())) return {v->data(), v->size()};
    return {};
}

void append_escaped(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

std::string format_double(double d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return buf;
}

}  // namespace

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "unknown";
}

bool is_valid_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

uint64_t value_type_size(ValueType t) {
    switch (t) {
        case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
        case ValueType::U16: case ValueType::I16: return 2;
        case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
        case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
        case ValueType::STRING: case ValueType::ARRAY: return 0;
    }
    return 0;
}

Value::Value() = default;

// Small helper so each factory is one line.
#define CRIA_SCALAR_FACTORY(fn, T, TYPE, BITS)  \
    Value Value::fn(T v) {                      \
        Value out;                              \
        out.type_ = ValueType::TYPE;            \
        out.bits_ = (BITS);                     \
        return out;                             \
    }
CRIA_SCALAR_FACTORY(u8, uint8_t, U8, v)
CRIA_SCALAR_FACTORY(i8, int8_t, I8, static_cast<uint64_t>(static_cast<int64_t>(v)))
CRIA_SCALAR_FACTORY(u16, uint16_t, U16, v)
CRIA_SCALAR_FACTORY(i16, int16_t, I16, static_cast<uint64_t>(static_cast<int64_t>(v)))
CRIA_SCALAR_FACTORY(u32, uint32_t, U32, v)
CRIA_SCALAR_FACTORY(i32, int32_t, I32, static_cast<uint64_t>(static_cast<int64_t>(v)))
CRIA_SCALAR_FACTORY(f32, float, F32, std::bit_cast<uint32_t>(v))
CRIA_SCALAR_FACTORY(boolean, bool, BOOL, v ? 1u : 0u)
CRIA_SCALAR_FACTORY(u64, uint64_t, U64, v)
CRIA_SCALAR_FACTORY(i64, int64_t, I64, static_cast<uint64_t>(v))
CRIA_SCALAR_FACTORY(f64, double, F64, std::bit_cast<uint64_t>(v))
#undef CRIA_SCALAR_FACTORY

Value Value::string(std::string v) {
    Value out;
    out.type_ = ValueType::STRING;
    out.string_ = std::move(v);
    return out;
}

Value Value::array(ValueType element_type, ArrayStorage elements) {
    const size_t want = storage_index(element_type);
    if (want == std::variant_npos || elements.index() != want) {
        throw Error("gguf: array storage does not match element type " +
                    std::string(value_type_name(element_type)));
    }
    if (element_type == ValueType::BOOL) {
        for (uint8_t b : std::get<0>(elements)) {
            if (b > 1) throw Error("gguf: bool array element is neither 0 nor 1");
        }
    }
    if (element_type == ValueType::ARRAY) {
        for (const Value& v : std::get<11>(elements)) {
            if (!v.is_array()) throw Error("gguf: array of arrays holds a non-array element");
        }
    }
    Value out;
    out.type_ = ValueType::ARRAY;
    out.array_type_ = element_type;
    out.array_ = std::make_shared<const ArrayStorage>(std::move(elements));
    return out;
}

ValueType Value::array_type() const { return is_array() ? array_type_ : ValueType::U8; }

size_t Value::size() const {
    if (!array_) return 0;
    return std::visit([](const auto& v) { return v.size(); }, *array_);
}

Value Value::at(size_t i) const {
    if (!is_array()) throw Error("gguf: at() on a " + std::string(value_type_name(type_)) + " value, not an array");
    if (i >= size()) {
        throw Error("gguf: array index " + std::to_string(i) + " out of range (size " + std::to_string(size()) + ")");
    }
    return std::visit(
        [&](const auto& v) -> Value {
            using T = typename std::decay_t<decltype(v)>::value_type;
            if constexpr (std::is_same_v<T, Value>) {
                return v[i];
            } else if constexpr (std::is_same_v<T, std::string>) {
                return Value::string(v[i]);
            } else if constexpr (std::is_same_v<T, uint8_t>) {
                return array_type_ == ValueType::BOOL ? Value::boolean(v[i] != 0) : Value::u8(v[i]);
            } else if constexpr (std::is_same_v<T, int8_t>) {
                return Value::i8(v[i]);
            } else if constexpr (std::is_same_v<T, uint16_t>) {
                return Value::u16(v[i]);
            } else if constexpr (std::is_same_v<T, int16_t>) {
                return Value::i16(v[i]);
            } else if constexpr (std::is_same_v<T, uint32_t>) {
                return Value::u32(v[i]);
            } else if constexpr (std::is_same_v<T, int32_t>) {
                return Value::i32(v[i]);
            } else if constexpr (std::is_same_v<T, float>) {
                return Value::f32(v[i]);
            } else if constexpr (std::is_same_v<T, uint64_t>) {
                return Value::u64(v[i]);
            } else if constexpr (std::is_same_v<T, int64_t>) {
                return Value::i64(v[i]);
            } else {
                return Value::f64(v[i]);
            }
        },
        *array_);
}

std::optional<uint64_t> Value::as_u64() const {
    switch (type_) {
        case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
            return bits_;
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            if (static_cast<int64_t>(bits_) < 0) return std::nullopt;
            return bits_;
        default:
            return std::nullopt;
    }
}

std::optional<int64_t> Value::as_i64() const {
    switch (type_) {
        case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
            if (bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
            return static_cast<int64_t>(bits_);
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            return static_cast<int64_t>(bits_);
        default:
            return std::nullopt;
    }
}

std::optional<double> Value::as_f64() const {
    switch (type_) {
        case ValueType::F32: return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits_)));
        case ValueType::F64: return std::bit_cast<double>(bits_);
        case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
            return static_cast<double>(bits_);
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            return static_cast<double>(static_cast<int64_t>(bits_));
        default:
            return std::nullopt;
    }
}

std::optional<bool> Value::as_bool() const {
    if (type_ != ValueType::BOOL) return std::nullopt;
    return bits_ != 0;
}

const std::string* Value::as_string() const { return type_ == ValueType::STRING ? &string_ : nullptr; }

std::span<const uint8_t> Value::as_u8_array() const { return typed_span<uint8_t>(array_); }
std::span<const int8_t> Value::as_i8_array() const { return typed_span<int8_t>(array_); }
std::span<const uint16_t> Value::as_u16_array() const { return typed_span<uint16_t>(array_); }
std::span<const int16_t> Value::as_i16_array() const { return typed_span<int16_t>(array_); }
std::span<const uint32_t> Value::as_u32_array() const { return typed_span<uint32_t>(array_); }
std::span<const int32_t> Value::as_i32_array() const { return typed_span<int32_t>(array_); }
std::span<const float> Value::as_f32_array() const { return typed_span<float>(array_); }
std::span<const uint64_t> Value::as_u64_array() const { return typed_span<uint64_t>(array_); }
std::span<const int64_t> Value::as_i64_array() const { return typed_span<int64_t>(array_); }
std::span<const double> Value::as_f64_array() const { return typed_span<double>(array_); }

const std::vector<std::string>* Value::as_string_array() const {
    return array_ ? std::get_if<std::vector<std::string>>(array_.get()) : nullptr;
}

const std::vector<Value>* Value::as_nested_array() const {
    return array_ ? std::get_if<std::vector<Value>>(array_.get()) : nullptr;
}

bool Value::operator==(const Value& other) const {
    if (type_ != other.type_) return false;
    if (type_ == ValueType::STRING) return string_ == other.string_;
    if (type_ != ValueType::ARRAY) return bits_ == other.bits_;
    if (array_type_ != other.array_type_) return false;
    if (array_ == other.array_) return true;
    if (!array_ || !other.array_) return false;
    // Floats compare by bits (NaN == NaN when the payload matches).
    if (const auto* a = std::get_if<std::vector<float>>(array_.get())) {
        const auto& b = std::get<std::vector<float>>(*other.array_);
        if (a->size() != b.size()) return false;
        for (size_t i = 0; i < a->size(); ++i) {
            if (std::bit_cast<uint32_t>((*a)[i]) != std::bit_cast<uint32_t>(b[i])) return false;
        }
        return true;
    }
    if (const auto* a = std::get_if<std::vector<double>>(array_.get())) {
        const auto& b = std::get<std::vector<double>>(*other.array_);
        if (a->size() != b.size()) return false;
        for (size_t i = 0; i < a->size(); ++i) {
            if (std::bit_cast<uint64_t>((*a)[i]) != std::bit_cast<uint64_t>(b[i])) return false;
        }
        return true;
    }
    return *array_ == *other.array_;
}

std::string Value::to_display_string(size_t max_items, size_t max_chars) const {
    switch (type_) {
        case ValueType::STRING: {
            std::string out;
            if (max_chars == 0 || string_.size() <= max_chars) {
                append_escaped(out, string_);
                return out;
            }
            // Cut on a character boundary: back off over UTF-8 continuation bytes.
            size_t cut = max_chars;
            while (cut > 0 && (static_cast<unsigned char>(string_[cut]) & 0xC0) == 0x80) --cut;
            append_escaped(out, string_.substr(0, cut));
            return out + "... (" + std::to_string(string_.size()) + " bytes)";
        }
        case ValueType::BOOL: return bits_ ? "true" : "false";
        case ValueType::F32: case ValueType::F64: return format_double(*as_f64());
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            return std::to_string(static_cast<int64_t>(bits_));
        case ValueType::ARRAY: {
            const size_t n = size();
            std::string out = "[";
            const size_t shown = n < max_items ? n : max_items;
            for (size_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                out += at(i).to_display_string(max_items, max_chars);
            }
            if (shown < n) out += (shown ? ", ..." : "...");
            out += "]";
            if (shown < n) out += " (" + std::to_string(n) + " " + std::string(value_type_name(array_type_)) + ")";
            return out;
        }
        default: return std::to_string(bits_);
    }
}

}  // namespace cria::gguf
