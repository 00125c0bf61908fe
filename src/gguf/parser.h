#pragma once
// The GGUF header/metadata/tensor-table parser shared by every way of opening
// a file. It reads from a byte span that may be only a prefix of the file:
// a read inside the file but past the prefix throws NeedMoreBytes so the
// caller can read more and start again, while a read past the end of the
// file is a cria::Error. Every size is checked against the bytes left before
// anything is allocated.

#include <cstdint>
#include <span>
#include <string>

#include "cria/gguf/file.h"

namespace cria::gguf {

// Thrown when the prefix given to the parser ends before the metadata does.
struct NeedMoreBytes {
    uint64_t at_least;  // the prefix must be at least this long
};

// Arrays of arrays may nest this deep (the top-level array is depth 1).
inline constexpr int kMaxArrayDepth = 8;
// ggml's GGML_MAX_NAME: tensor names must be shorter than this.
inline constexpr size_t kMaxTensorName = 64;

class Parser {
public:
    // `name` is the file name used in error messages.
    Parser(std::span<const uint8_t> prefix, uint64_t file_size, std::string name);

    // Fills version, alignment, metadata, tensor table and data offset of
    // `file` and checks that every tensor's data lies inside the file.
    void parse(File& file);

private:
    [[noreturn]] void fail(const std::string& field, const std::string& problem) const;
    [[noreturn]] void fail_at(uint64_t at, const std::string& field, const std::string& problem) const;
    uint64_t remaining() const { return file_size_ - pos_; }
    // Makes sure `n` more bytes exist (in the file and in the prefix).
    void need(uint64_t n, const std::string& field);
    // The same with the field name made by `name()` only when it is needed.
    template <class NameFn>
    void need_lazy(uint64_t n, NameFn name) {
        if (n > remaining()) {
            fail(name(), "needs " + std::to_string(n) + " bytes but the file ends after " +
                             std::to_string(remaining()) + " (file truncated?)");
        }
        if (pos_ + n > bytes_.size()) throw NeedMoreBytes{pos_ + n};
    }
    static constexpr uint64_t kNoIndex = ~uint64_t{0};
    template <class T>
    T read_scalar(const std::string& field);
    // `index` names an array element in error messages.
    std::string read_string(const std::string& field, uint64_t index = kNoIndex);
    Value read_value(uint32_t type_id, const std::string& field, int depth);
    Value read_array(const std::string& field, int depth);

    void parse_header(File& file, uint64_t& n_tensors, uint64_t& n_kv);
    void parse_metadata(File& file, uint64_t n_kv);
    void parse_alignment(File& file);
    void parse_tensor_infos(File& file, uint64_t n_tensors);
    void check_tensor_data(File& file);

    std::span<const uint8_t> bytes_;
    uint64_t file_size_;
    std::string name_;
    uint64_t pos_ = 0;
};

}  // namespace cria::gguf
