// Parsing and validating the GGUF header, metadata and tensor table.
//
// Layout (all little-endian):
//   u32 magic "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: { string key, u32 type, value },
//   tensor infos: { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset },
//   zero padding to the alignment, then the data section.
// A string is a u64 byte length followed by the bytes (no terminator); an
// array is a u32 element type, a u64 count, then the elements.

#include "gguf/parser.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>

#include "cria/core/error.h"
#include "gguf/utf8.h"

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace cria::gguf {

namespace {

// The fewest bytes one array element of each type can take in the file; used
// to reject counts that cannot possibly fit before allocating for them.
uint64_t min_element_bytes(ValueType t) {
    switch (t) {
        case ValueType::STRING: return 8;   // the length alone
        case ValueType::ARRAY: return 12;   // element type + count
        default: return value_type_size(t);
    }
}

std::string quoted(std::string_view s) {
    // Names in messages are cut short and made printable: they may be hostile.
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < 80; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (s.size() > 80) out += "...";
    return out + "'";
}

}  // namespace

Parser::Parser(std::span<const uint8_t> prefix, uint64_t file_size, std::string name)
    : bytes_(prefix), file_size_(file_size), name_(std::move(name)) {}

void Parser::fail(const std::string& field, const std::string& problem) const { fail_at(pos_, field, problem); }

void Parser::fail_at(uint64_t at, const std::string& field, const std::string& problem) const {
    throw Error(name_ + ": " + field + ": " + problem + " (at byte " + std::to_string(at) + ")");
}

void Parser::need(uint64_t n, const std::string& field) {
    need_lazy(n, [&] { return field; });
}

template <class T>
T Parser::read_scalar(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
}

std::string Parser::read_string(const std::string& field, uint64_t index) {
    // Called once per token of a vocabulary: the field name is only spelled
    // out when there is an error to report.
    const auto name = [&] { return index == kNoIndex ? field : field + "[" + std::to_string(index) + "]"; };
    const uint64_t start = pos_;
    need_lazy(8, [&] { return name() + " length"; });
    uint64_t len;
    std::memcpy(&len, bytes_.data() + pos_, 8);
    pos_ += 8;
    if (len > remaining()) {
        fail_at(start, name(), "string length " + std::to_string(len) + " exceeds the " +
                                   std::to_string(remaining()) + " bytes left in the file");
    }
    need_lazy(len, name);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
}

Value Parser::read_value(uint32_t type_id, const std::string& field, int depth) {
    const uint64_t start = pos_;
    switch (static_cast<ValueType>(type_id)) {
        case ValueType::U8: return Value::u8(read_scalar<uint8_t>(field));
        case ValueType::I8: return Value::i8(read_scalar<int8_t>(field));
        case ValueType::U16: return Value::u16(read_scalar<uint16_t>(field));
        case ValueType::I16: return Value::i16(read_scalar<int16_t>(field));
        case ValueType::U32: return Value::u32(read_scalar<uint32_t>(field));
        case ValueType::I32: return Value::i32(read_scalar<int32_t>(field));
        case ValueType::F32: return Value::f32(read_scalar<float>(field));
        case ValueType::U64: return Value::u64(read_scalar<uint64_t>(field));
        case ValueType::I64: return Value::i64(read_scalar<int64_t>(field));
        case ValueType::F64: return Value::f64(read_scalar<double>(field));
        case ValueType::BOOL: {
            const uint8_t b = read_scalar<uint8_t>(field);
            if (b > 1) fail_at(start, field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
            return Value::boolean(b != 0);
        }
        case ValueType::STRING: return Value::string(read_string(field));
        case ValueType::ARRAY: return read_array(field, depth + 1);
    }
    fail_at(start, field, "unknown value type " + std::to_string(type_id) + " (known: 0..12)");
}

// Reads `n` fixed-size elements into a vector after the caller checked they fit.
template <class T>
static std::vector<T> copy_elements(const uint8_t* src, uint64_t n) {
    std::vector<T> v(static_cast<size_t>(n));
    if (n) std::memcpy(v.data(), src, static_cast<size_t>(n) * sizeof(T));
    return v;
}

Value Parser::read_array(const std::string& field, int depth) {
    const uint64_t start = pos_;
    if (depth > kMaxArrayDepth) {
        fail(field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    }
    const uint32_t et_id = read_scalar<uint32_t>(field + " array element type");
    if (!is_valid_value_type(et_id)) {
        fail_at(start, field, "unknown array element type " + std::to_string(et_id) + " (known: 0..12)");
    }
    const auto et = static_cast<ValueType>(et_id);
    const uint64_t count_at = pos_;
    const uint64_t n = read_scalar<uint64_t>(field + " array length");
    // Compare with the bytes left before allocating anything for the elements.
    const uint64_t min_bytes = min_element_bytes(et);
    if (n > remaining() / min_bytes) {
        fail_at(count_at, field, "array of " + std::to_string(n) + " " + std::string(value_type_name(et)) +
                                     " elements cannot fit in the " + std::to_string(remaining()) +
                                     " bytes left in the file");
    }
    const std::string elem_field = field + " element";
    switch (et) {
        case ValueType::STRING: {
            std::vector<std::string> v;
            v.reserve(static_cast<size_t>(n));
            for (uint64_t i = 0; i < n; ++i) v.push_back(read_string(field, i));
            return Value::array(et, std::move(v));
        }
        case ValueType::ARRAY: {
            std::vector<Value> v;
            v.reserve(static_cast<size_t>(n));
            for (uint64_t i = 0; i < n; ++i) v.push_back(read_array(field + "[" + std::to_string(i) + "]", depth + 1));
            return Value::array(et, std::move(v));
        }
        default: break;
    }
    const uint64_t bytes = n * min_bytes;  // cannot overflow: n <= remaining / min_bytes
    need(bytes, elem_field + "s");
    const uint8_t* src = bytes_.data() + pos_;
    pos_ += bytes;
    switch (et) {
        case ValueType::U8: return Value::array(et, copy_elements<uint8_t>(src, n));
        case ValueType::BOOL: {
            auto v = copy_elements<uint8_t>(src, n);
            for (size_t i = 0; i < v.size(); ++i) {
                if (v[i] > 1) fail_at(pos_ - bytes + i, field + "[" + std::to_string(i) + "]", "bool value " + std::to_string(v[i]) + " is neither 0 nor 1");
            }
            return Value::array(et, std::move(v));
        }
        case ValueType::I8: return Value::array(et, copy_elements<int8_t>(src, n));
        case ValueType::U16: return Value::array(et, copy_elements<uint16_t>(src, n));
        case ValueType::I16: return Value::array(et, copy_elements<int16_t>(src, n));
        case ValueType::U32: return Value::array(et, copy_elements<uint32_t>(src, n));
        case ValueType::I32: return Value::array(et, copy_elements<int32_t>(src, n));
        case ValueType::F32: return Value::array(et, copy_elements<float>(src, n));
        case ValueType::U64: return Value::array(et, copy_elements<uint64_t>(src, n));
        case ValueType::I64: return Value::array(et, copy_elements<int64_t>(src, n));
        case ValueType::F64: return Value::array(et, copy_elements<double>(src, n));
        default: break;
    }
    fail_at(start, field, "unhandled array element type");  // unreachable: every type is handled above
}

void Parser::parse_header(File& file, uint64_t& n_tensors, uint64_t& n_kv) {
    if (file_size_ < 4) fail_at(0, "header", "file is " + std::to_string(file_size_) + " bytes, too small for a GGUF file");
    const uint32_t magic = read_scalar<uint32_t>("magic");
    if (magic != kMagic) {
        if (magic == __builtin_bswap32(kMagic)) fail_at(0, "magic", "big-endian GGUF files are not supported");
        char text[5] = {};
        std::memcpy(text, &magic, 4);
        for (char& c : text) if (c && (c < 0x20 || c > 0x7e)) c = '?';
        fail_at(0, "magic", std::string("not a GGUF file (starts with '") + text + "', expected 'GGUF')");
    }
    file.version_ = read_scalar<uint32_t>("version");
    if (file.version_ == 1) fail_at(4, "version", "GGUF version 1 is not supported (re-convert the model; versions 2 and 3 are)");
    if (file.version_ != 2 && file.version_ != 3) {
        if (__builtin_bswap32(file.version_) == 2 || __builtin_bswap32(file.version_) == 3) {
            fail_at(4, "version", "big-endian GGUF files are not supported");
        }
        fail_at(4, "version", "unsupported GGUF version " + std::to_string(file.version_) + " (supported: 2, 3)");
    }
    n_tensors = read_scalar<uint64_t>("tensor count");
    n_kv = read_scalar<uint64_t>("metadata count");
}

void Parser::parse_metadata(File& file, uint64_t n_kv) {
    // Smallest key/value: an empty key (8) + the type (4) + a one-byte value.
    if (n_kv > remaining() / 13) {
        fail_at(16, "metadata count", std::to_string(n_kv) + " key/value pairs cannot fit in the " +
                                          std::to_string(remaining()) + " bytes left in the file");
    }
    file.metadata_.reserve(static_cast<size_t>(n_kv));
    file.metadata_index_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t i = 0; i < n_kv; ++i) {
        const uint64_t key_at = pos_;
        const std::string where = "metadata #" + std::to_string(i);
        std::string key = read_string(where + " key");
        if (key.empty()) fail_at(key_at, where + " key", "empty key");
        if (!is_valid_utf8(key)) fail_at(key_at, where + " key " + quoted(key), "key is not valid UTF-8");
        const std::string field = "metadata key " + quoted(key);
        if (file.metadata_index_.count(key)) fail_at(key_at, field, "duplicate key");
        const uint32_t type_id = read_scalar<uint32_t>(field + " type");
        if (!is_valid_value_type(type_id)) {
            fail(field, "unknown value type " + std::to_string(type_id) + " (known: 0..12)");
        }
        Value value = read_value(type_id, field, 0);
        file.metadata_index_.emplace(key, file.metadata_.size());
        file.metadata_.emplace_back(std::move(key), std::move(value));
    }
}

void Parser::parse_alignment(File& file) {
    const Value* v = file.find("general.alignment");
    if (!v) return;
    // llama.cpp writes it as u32; any unsigned integer type that fits is accepted.
    const std::optional<uint64_t> a = v->as_u64();
    if (!a) {
        throw Error(name_ + ": metadata key 'general.alignment': has type " + std::string(value_type_name(v->type())) +
                    ", expected an unsigned integer");
    }
    if (*a == 0 || !std::has_single_bit(*a) || *a > (uint64_t{1} << 30)) {
        throw Error(name_ + ": metadata key 'general.alignment': " + std::to_string(*a) +
                    " is not a power of two between 1 and 2^30");
    }
    file.alignment_ = *a;
}

void Parser::parse_tensor_infos(File& file, uint64_t n_tensors) {
    // Smallest tensor info: empty name (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
    if (n_tensors > remaining() / 32) {
        fail_at(8, "tensor count", std::to_string(n_tensors) + " tensors cannot fit in the " +
                                       std::to_string(remaining()) + " bytes left in the file");
    }
    file.tensors_.reserve(static_cast<size_t>(n_tensors));
    file.tensor_index_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        const uint64_t name_at = pos_;
        const std::string where = "tensor #" + std::to_string(i);
        TensorInfo t;
        t.name = read_string(where + " name");
        if (t.name.empty()) fail_at(name_at, where + " name", "empty tensor name");
        if (!is_valid_utf8(t.name)) fail_at(name_at, where + " name " + quoted(t.name), "name is not valid UTF-8");
        if (t.name.size() >= kMaxTensorName) {
            fail_at(name_at, where + " name " + quoted(t.name),
                    "name is " + std::to_string(t.name.size()) + " bytes, the limit is " +
                        std::to_string(kMaxTensorName - 1));
        }
        const std::string field = "tensor " + quoted(t.name);
        if (file.tensor_index_.count(t.name)) fail_at(name_at, field, "duplicate tensor name");

        const uint64_t dims_at = pos_;
        t.n_dims = read_scalar<uint32_t>(field + " n_dims");
        if (t.n_dims == 0 || t.n_dims > kMaxDims) {
            fail_at(dims_at, field + " n_dims", std::to_string(t.n_dims) + " dimensions (must be 1.." +
                                                    std::to_string(kMaxDims) + ")");
        }
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            const uint64_t at = pos_;
            const std::string dim_field = field + " ne[" + std::to_string(d) + "]";
            const uint64_t ne = read_scalar<uint64_t>(dim_field);
            if (ne == 0) fail_at(at, dim_field, "dimension is zero");
            if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                fail_at(at, dim_field, "dimension " + std::to_string(static_cast<int64_t>(ne)) + " is negative");
            }
            t.ne[d] = ne;
        }
        const uint64_t type_at = pos_;
        const uint32_t type_id = read_scalar<uint32_t>(field + " type");
        const ElementTypeInfo* info = element_type_info(type_id);
        if (!info) fail_at(type_at, field + " type", "unknown element type id " + std::to_string(type_id));
        t.type = info->type;
        t.offset = read_scalar<uint64_t>(field + " offset");

        // Size: whole blocks per row, and no overflow in rows x row size.
        if (t.ne[0] % info->block_size != 0) {
            fail_at(dims_at, field + " ne[0]", "row of " + std::to_string(t.ne[0]) + " values is not a multiple of the " +
                                                   std::string(info->name) + " block size " +
                                                   std::to_string(info->block_size));
        }
        // row_size_bytes gives nothing when a row's byte count overflows.
        const std::optional<uint64_t> row_bytes = row_size_bytes(t.type, t.ne[0]);
        if (!row_bytes) fail_at(dims_at, field + " shape", "size of one row overflows 64 bits");
        uint64_t n_elements = t.ne[0];
        uint64_t n_bytes = *row_bytes;
        for (uint32_t d = 1; d < kMaxDims; ++d) {
            if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements) ||
                n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                __builtin_mul_overflow(n_bytes, t.ne[d], &n_bytes)) {
                fail_at(dims_at, field + " shape", "number of elements overflows 64 bits");
            }
        }
        t.n_bytes = n_bytes;
        file.tensor_index_.emplace(t.name, file.tensors_.size());
        file.tensors_.push_back(std::move(t));
    }
}

void Parser::check_tensor_data(File& file) {
    // The data section starts at the next multiple of the alignment.
    file.metadata_end_ = pos_;
    const uint64_t a = file.alignment_;
    const uint64_t rem = pos_ % a;
    const uint64_t pad = rem ? a - rem : 0;
    file.data_offset_ = pos_ + pad;
    if (file.tensors_.empty()) return;  // some writers omit the final padding when there is no data
    if (file.data_offset_ > file_size_) {
        fail("data section", "starts at byte " + std::to_string(file.data_offset_) + ", past the end of the " +
                                 std::to_string(file_size_) + "-byte file");
    }
    const uint64_t data_size = file_size_ - file.data_offset_;
    for (const TensorInfo& t : file.tensors_) {
        const std::string field = "tensor " + quoted(t.name);
        if (t.offset % a != 0) {
            throw Error(name_ + ": " + field + " offset: " + std::to_string(t.offset) +
                        " is not a multiple of the alignment " + std::to_string(a));
        }
        if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
            throw Error(name_ + ": " + field + " data: bytes " + std::to_string(t.offset) + " + " +
                        std::to_string(t.n_bytes) + " of the data section run past the end of the file (data section is " +
                        std::to_string(data_size) + " bytes from byte " + std::to_string(file.data_offset_) + ")");
        }
    }
    // No two tensors may share bytes.
    std::vector<size_t> order(file.tensors_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return file.tensors_[x].offset < file.tensors_[y].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& prev = file.tensors_[order[k - 1]];
        const TensorInfo& cur = file.tensors_[order[k]];
        if (prev.offset + prev.n_bytes > cur.offset) {
            throw Error(name_ + ": tensor " + quoted(cur.name) + " offset: data at " + std::to_string(cur.offset) +
                        " overlaps tensor " + quoted(prev.name) + " (bytes " + std::to_string(prev.offset) + ".." +
                        std::to_string(prev.offset + prev.n_bytes) + ")");
        }
    }
}

void Parser::parse(File& file) {
    pos_ = 0;
    file.metadata_.clear();
    file.metadata_index_.clear();
    file.tensors_.clear();
    file.tensor_index_.clear();
    file.alignment_ = kDefaultAlignment;
    file.file_size_ = file_size_;
    uint64_t n_tensors = 0, n_kv = 0;
    parse_header(file, n_tensors, n_kv);
    parse_metadata(file, n_kv);
    parse_alignment(file);
    parse_tensor_infos(file, n_tensors);
    check_tensor_data(file);
}

}  // namespace cria::gguf
