#pragma once
// Reading GGUF files (versions 2 and 3).
//
// Opening parses the header, metadata and tensor table, validates all of it
// against the file size, and maps (or reads, depending on the load mode) the
// tensor data. A malformed or hostile file gives one cria::Error naming the
// file and the field at fault; nothing is ever allocated from an unchecked size.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cria/gguf/load_mode.h"
#include "cria/gguf/tensor_info.h"
#include "cria/gguf/value.h"

namespace cria::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint64_t kDefaultAlignment = 32;

class TensorStorage;  // where the tensor data lives (mapping or buffer); see file.cpp

class File {
public:
    // Opens and validates `path`. Throws cria::Error on any problem.
    static std::unique_ptr<File> open(const std::string& path, LoadMode mode = LoadMode::Auto,
                                      ProgressCallback progress = {});

    // Parses a GGUF image held in memory (the tensor data is viewed, not copied,
    // so `bytes` must outlive the File). `name` is used in error messages.
    // This is what the fuzzer drives.
    static std::unique_ptr<File> parse(std::span<const uint8_t> bytes, const std::string& name);

    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // from the start of the file
    // Where the tensor table ends (the padding before the data section starts here).
    uint64_t metadata_end() const { return metadata_end_; }
    uint64_t file_size() const { return file_size_; }
    const std::string& path() const { return path_; }
    // How the data was actually loaded (Auto resolves to Mmap or None, Dio may fall back).
    LoadMode load_mode() const { return load_mode_; }
    // Non-fatal notes from opening (mlock refused, O_DIRECT refused...), for the user.
    const std::vector<std::string>& warnings() const { return warnings_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
    const Value* find(std::string_view key) const;

    // Typed getters. The optional forms give nothing when the key is absent;
    // the fallback forms give `fallback` then. Integers of any width are
    // accepted when the value fits; a present key of the wrong type (or an
    // integer that does not fit) throws cria::Error naming key and types.
    std::optional<uint32_t> get_u32(std::string_view key) const;
    uint32_t get_u32(std::string_view key, uint32_t fallback) const;
    std::optional<uint64_t> get_u64(std::string_view key) const;
    uint64_t get_u64(std::string_view key, uint64_t fallback) const;
    std::optional<int32_t> get_i32(std::string_view key) const;
    int32_t get_i32(std::string_view key, int32_t fallback) const;
    std::optional<float> get_f32(std::string_view key) const;  // any float or integer type
    float get_f32(std::string_view key, float fallback) const;
    std::optional<bool> get_bool(std::string_view key) const;
    bool get_bool(std::string_view key, bool fallback) const;
    std::optional<std::string> get_string(std::string_view key) const;
    std::string get_string(std::string_view key, const std::string& fallback) const;

    // general.architecture; throws cria::Error when missing or not a string.
    std::string architecture() const;
    // "<architecture>.<suffix>", e.g. arch_key("context_length").
    std::string arch_key(std::string_view suffix) const;

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;
    // The tensor's bytes (valid while the File lives).
    std::span<const uint8_t> tensor_data(const TensorInfo& tensor) const;
    // Says that this process will not read `bytes` (part of the data) for a
    // while, e.g. after copying them: with a memory-mapped file their pages
    // leave the process (the resident size drops; a later read faults them
    // back in from the file). Other load modes keep their buffer as it is.
    void release_pages(std::span<const uint8_t> bytes) const;

private:
    File() = default;
    friend class Parser;

    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    uint64_t metadata_end_ = 0;
    uint64_t file_size_ = 0;
    LoadMode load_mode_ = LoadMode::Auto;
    std::vector<std::string> warnings_;
    std::vector<std::pair<std::string, Value>> metadata_;
    std::vector<TensorInfo> tensors_;
    // Lookup by name; the hash is transparent so a string_view needs no copy.
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> metadata_index_;
    std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> tensor_index_;
    std::unique_ptr<TensorStorage> storage_;
    std::span<const uint8_t> data_;  // the data section (file_size - data_offset bytes)
};

}  // namespace cria::gguf
