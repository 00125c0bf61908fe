// Writing GGUF v3 files with llama.cpp's exact layout, streaming tensor data.

#include "cria/gguf/writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "gguf/parser.h"
#include "gguf/utf8.h"

namespace cria::gguf {

namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// A buffered output file that turns every failure into a cria::Error and
// removes the partial file unless commit() was reached.
class OutFile {
public:
    explicit OutFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
        if (!f_) throw Error(path + ": cannot create: " + std::strerror(errno));
        std::setvbuf(f_, nullptr, _IOFBF, size_t{1} << 20);
    }
    ~OutFile() {
        if (f_) {
            std::fclose(f_);
            std::remove(path_.c_str());
        }
    }
    void write(const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, f_) != n) throw Error(path_ + ": write failed: " + std::strerror(errno));
        written_ += n;
    }
    template <class T>
    void scalar(T v) {
        static_assert(std::is_trivially_copyable_v<T>);
        write(&v, sizeof v);
    }
    void string(const std::string& s) {
        scalar<uint64_t>(s.size());
        write(s.data(), s.size());
    }
    void zeros(uint64_t n) {
        static const uint8_t kZeros[256] = {};
        while (n) {
            const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof kZeros));
            write(kZeros, k);
            n -= k;
        }
    }
    void pad_to(uint64_t alignment) { zeros(align_up(written_, alignment) - written_); }
    void commit() {
        const int rc = std::fclose(f_);
        f_ = nullptr;
        if (rc != 0) {
            std::remove(path_.c_str());
            throw Error(path_ + ": write failed: " + std::strerror(errno));
        }
    }

private:
    std::string path_;
    std::FILE* f_;
    uint64_t written_ = 0;
};

void write_value(OutFile& out, const Value& v);

void write_array_body(OutFile& out, const Value& v) {
    out.scalar<uint32_t>(static_cast<uint32_t>(v.array_type()));
    out.scalar<uint64_t>(v.size());
    std::visit(
        [&](const auto& items) {
            using T = typename std::decay_t<decltype(items)>::value_type;
            if constexpr (std::is_same_v<T, std::string>) {
                for (const std::string& s : items) out.string(s);
            } else if constexpr (std::is_same_v<T, Value>) {
                for (const Value& inner : items) write_array_body(out, inner);
            } else {
                out.write(items.data(), items.size() * sizeof(T));
            }
        },
        *v.array_storage());
}

void write_value(OutFile& out, const Value& v) {
    switch (v.type()) {
        case ValueType::STRING: out.string(*v.as_string()); return;
        case ValueType::ARRAY: write_array_body(out, v); return;
        default: {
            // Little-endian host: the low bytes of the payload are the value.
            const uint64_t bits = v.scalar_bits();
            out.write(&bits, static_cast<size_t>(value_type_size(v.type())));
            return;
        }
    }
}

}  // namespace

void Writer::add_metadata(std::string key, Value value) {
    if (key.empty()) throw Error("gguf writer: empty metadata key");
    if (!is_valid_utf8(key)) throw Error("gguf writer: metadata key is not valid UTF-8");
    for (const auto& kv : metadata_) {
        if (kv.first == key) throw Error("gguf writer: duplicate metadata key '" + key + "'");
    }
    if (key == "general.alignment") {
        const std::optional<uint64_t> a = value.as_u64();
        if (!a || *a == 0 || !std::has_single_bit(*a) || *a > (uint64_t{1} << 30)) {
            throw Error("gguf writer: general.alignment must be an unsigned power of two (got " +
                        value.to_display_string() + ")");
        }
        alignment_ = *a;
        // Tensors already added move to the new alignment.
        data_size_ = 0;
        for (TensorInfo& t : tensors_) {
            t.offset = data_size_;
            data_size_ += align_up(t.n_bytes, alignment_);
        }
    }
    metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::add_tensor(std::string name, ElementType type, std::span<const uint64_t> shape, TensorBytes bytes) {
    const std::string field = "gguf writer: tensor '" + name + "'";
    if (name.empty()) throw Error("gguf writer: empty tensor name");
    if (!is_valid_utf8(name)) throw Error("gguf writer: tensor name is not valid UTF-8");
    if (name.size() >= kMaxTensorName) {
        throw Error(field + ": name longer than " + std::to_string(kMaxTensorName - 1) + " bytes");
    }
    for (const TensorInfo& t : tensors_) {
        if (t.name == name) throw Error(field + ": duplicate tensor name");
    }
    const ElementTypeInfo* info = element_type_info(type);
    if (!info) throw Error(field + ": unknown element type");
    if (shape.empty() || shape.size() > kMaxDims) {
        throw Error(field + ": " + std::to_string(shape.size()) + " dimensions (must be 1..4)");
    }
    if (!bytes) throw Error(field + ": no data source");
    TensorInfo t;
    t.name = std::move(name);
    t.type = type;
    t.n_dims = static_cast<uint32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0 || shape[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            throw Error(field + ": dimension " + std::to_string(d) + " is " + std::to_string(shape[d]));
        }
        t.ne[d] = shape[d];
    }
    const std::optional<uint64_t> row = row_size_bytes(type, t.ne[0]);
    if (!row) {
        throw Error(field + ": row of " + std::to_string(t.ne[0]) + " values is not a whole number of " +
                    std::string(info->name) + " blocks of " + std::to_string(info->block_size));
    }
    uint64_t n_bytes = *row, n_elements = t.ne[0];
    for (uint32_t d = 1; d < kMaxDims; ++d) {
        if (__builtin_mul_overflow(n_bytes, t.ne[d], &n_bytes) ||
            __builtin_mul_overflow(n_elements, t.ne[d], &n_elements)) {
            throw Error(field + ": size overflows 64 bits");
        }
    }
    t.n_bytes = n_bytes;
    t.offset = data_size_;
    if (__builtin_add_overflow(data_size_, align_up(n_bytes, alignment_), &data_size_)) {
        throw Error(field + ": total data size overflows 64 bits");
    }
    tensors_.push_back(std::move(t));
    sources_.push_back(std::move(bytes));
}

void Writer::write(const std::string& path) const {
    OutFile out(path);
    out.scalar<uint32_t>(kMagic);
    out.scalar<uint32_t>(3);
    out.scalar<uint64_t>(tensors_.size());
    out.scalar<uint64_t>(metadata_.size());
    for (const auto& [key, value] : metadata_) {
        out.string(key);
        out.scalar<uint32_t>(static_cast<uint32_t>(value.type()));
        write_value(out, value);
    }
    for (const TensorInfo& t : tensors_) {
        out.string(t.name);
        out.scalar<uint32_t>(t.n_dims);
        for (uint32_t d = 0; d < t.n_dims; ++d) out.scalar<uint64_t>(t.ne[d]);
        out.scalar<uint32_t>(static_cast<uint32_t>(t.type));
        out.scalar<uint64_t>(t.offset);
    }
    if (!tensors_.empty() || pad_without_tensors_) out.pad_to(alignment_);
    // One tensor at a time: its bytes are asked for, written, padded, released.
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const std::span<const uint8_t> bytes = sources_[i]();
        if (bytes.size() != tensors_[i].n_bytes) {
            throw Error(path + ": tensor '" + tensors_[i].name + "' source gave " + std::to_string(bytes.size()) +
                        " bytes, expected " + std::to_string(tensors_[i].n_bytes));
        }
        out.write(bytes.data(), bytes.size());
        out.pad_to(alignment_);
    }
    out.commit();
}

void write_copy(const File& file, const std::string& path) {
    Writer w;
    w.set_pad_without_tensors(file.file_size() != file.metadata_end());
    for (const auto& [key, value] : file.metadata()) w.add_metadata(key, value);
    for (const TensorInfo& t : file.tensors()) {
        const std::span<const uint64_t> shape(t.ne.data(), t.n_dims);
        w.add_tensor(t.name, t.type, shape, [&file, &t] { return file.tensor_data(t); });
    }
    w.write(path);
}

}  // namespace cria::gguf
