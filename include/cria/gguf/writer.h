#pragma once
// Writing GGUF version 3 files, laid out exactly as llama.cpp's gguf writer
// does: header, metadata, tensor table, zero padding to the alignment, then
// each tensor's data padded with zeros to the alignment. A file read with
// File and written back with write_copy() is byte-identical to the original
// when the original was written by llama.cpp (or its Python gguf package).
//
// Tensor data is streamed: each tensor's bytes are asked for only when that
// tensor is written, so a model is never held twice in memory.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/gguf/tensor_info.h"
#include "cria/gguf/value.h"

namespace cria::gguf {

class File;

// Produces a tensor's bytes when the writer reaches it. The span must stay
// valid until the callback is called again (or the write ends), and must hold
// exactly the tensor's size in bytes.
using TensorBytes = std::function<std::span<const uint8_t>()>;

class Writer {
public:
    // Adds a metadata key. Throws cria::Error on a duplicate key, a key that is
    // empty or not UTF-8, or a general.alignment that is not a u32 power of two.
    void add_metadata(std::string key, Value value);

    // Adds a tensor of `shape` (innermost dimension first, 1 to 4 dims).
    // Throws cria::Error on a duplicate or invalid name, a bad shape, or a row
    // that is not a whole number of blocks of `type`.
    void add_tensor(std::string name, ElementType type, std::span<const uint64_t> shape, TensorBytes bytes);

    // Whether a file without tensors still ends with zero padding up to the
    // alignment. llama.cpp's writer pads; older writers (the tokenizer
    // vocabularies bundled with llama.cpp) stop right after the metadata.
    // Default: pad. write_copy() keeps what the original file did.
    void set_pad_without_tensors(bool pad) { pad_without_tensors_ = pad; }

    // Alignment in force: general.alignment when set, else 32.
    uint64_t alignment() const { return alignment_; }
    const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
    // The tensor table as it will be written (offsets from the data section).
    const std::vector<TensorInfo>& tensors() const { return tensors_; }

    // Writes the file. Throws cria::Error on an I/O failure or when a tensor
    // callback returns the wrong number of bytes; the partial file is removed.
    void write(const std::string& path) const;

private:
    std::vector<std::pair<std::string, Value>> metadata_;
    std::vector<TensorInfo> tensors_;
    std::vector<TensorBytes> sources_;
    uint64_t alignment_ = 32;
    uint64_t data_size_ = 0;
    bool pad_without_tensors_ = true;
};

// Writes `file`'s metadata and tensors (in file order) to `path`.
void write_copy(const File& file, const std::string& path);

}  // namespace cria::gguf
