#pragma once
// One GGUF metadata value: a scalar, a string, or an array (possibly of arrays).
//
// Values are immutable once built and cheap to copy: array contents live in a
// shared, read-only block, so handing a Value around never copies a vocabulary.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cria::gguf {

// The type ids exactly as the GGUF format numbers them.
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

// "u32", "string", "array", ...; "unknown" for an id outside 0..12.
std::string_view value_type_name(ValueType t);
// True for ids 0..12.
bool is_valid_value_type(uint32_t id);
// Bytes one element of a fixed-size type takes in the file; 0 for STRING and ARRAY.
uint64_t value_type_size(ValueType t);

class Value {
public:
    // Storage of an array's elements, one alternative per element type.
    // BOOL elements are kept as uint8_t (0 or 1) so they can be viewed as a span.
    using ArrayStorage = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                                      std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                                      std::vector<float>, std::vector<uint64_t>, std::vector<int64_t>,
                                      std::vector<double>, std::vector<std::string>, std::vector<Value>>;

    Value();  // a u8 zero; exists so containers of Value can be resized

    // --- Building values (the reader and the writer's callers use these) ---
    static Value u8(uint8_t v);
    static Value i8(int8_t v);
    static Value u16(uint16_t v);
    static Value i16(int16_t v);
    static Value u32(uint32_t v);
    static Value i32(int32_t v);
    static Value f32(float v);
    static Value boolean(bool v);
    static Value string(std::string v);
    static Value u64(uint64_t v);
    static Value i64(int64_t v);
    static Value f64(double v);
    // An array of `element_type`. The storage alternative must match the type
    // (std::vector<uint8_t> for U8 and BOOL, std::vector<Value> for ARRAY, whose
    // elements must all be arrays); throws cria::Error otherwise.
    static Value array(ValueType element_type, ArrayStorage elements);

    // --- Inspecting ---
    ValueType type() const { return type_; }
    bool is_array() const { return type_ == ValueType::ARRAY; }
    // Element type of an array; meaningless (U8) for a scalar.
    ValueType array_type() const;
    // Number of elements of an array; 0 for a scalar.
    size_t size() const;
    // Element `i` of an array as a Value of its own (a copy: cheap for scalars,
    // strings are copied, nested arrays share their storage). Throws
    // cria::Error when this is not an array or `i` is out of range.
    Value at(size_t i) const;

    // Scalars converted when the value fits, nothing otherwise (or for arrays).
    // as_u64 / as_i64 take any integer type (not bool, not floats);
    // as_f64 takes any integer or float type; as_bool only BOOL.
    std::optional<uint64_t> as_u64() const;
    std::optional<int64_t> as_i64() const;
    std::optional<double> as_f64() const;
    std::optional<bool> as_bool() const;
    const std::string* as_string() const;  // nullptr unless STRING

    // Typed views of arrays: an empty span / nullptr when the element type differs.
    std::span<const uint8_t> as_u8_array() const;  // U8 and BOOL arrays
    std::span<const int8_t> as_i8_array() const;
    std::span<const uint16_t> as_u16_array() const;
    std::span<const int16_t> as_i16_array() const;
    std::span<const uint32_t> as_u32_array() const;
    std::span<const int32_t> as_i32_array() const;
    std::span<const float> as_f32_array() const;
    std::span<const uint64_t> as_u64_array() const;
    std::span<const int64_t> as_i64_array() const;
    std::span<const double> as_f64_array() const;
    const std::vector<std::string>* as_string_array() const;
    const std::vector<Value>* as_nested_array() const;  // ARRAY of ARRAY

    // The whole storage of an array (nullptr for a scalar), for generic code.
    const ArrayStorage* array_storage() const { return array_.get(); }

    // Raw scalar payload: the integer / bool value, or the bit pattern of a
    // float (f32 bits widened, f64 bits as is). Used by the writer.
    uint64_t scalar_bits() const { return bits_; }

    // Deep equality: same type, same element type, same contents. Floats are
    // compared by bit pattern so NaN payloads round-trip exactly.
    bool operator==(const Value& other) const;

    // Short human-readable rendering; arrays longer than `max_items` show
    // their length and the first items. Strings are quoted and escaped, and
    // cut after `max_chars` bytes (0: never) with their full length noted.
    std::string to_display_string(size_t max_items = 8, size_t max_chars = 0) const;

private:
    ValueType type_ = ValueType::U8;
    ValueType array_type_ = ValueType::U8;
    uint64_t bits_ = 0;
    std::string string_;
    std::shared_ptr<const ArrayStorage> array_;
};

}  // namespace cria::gguf
