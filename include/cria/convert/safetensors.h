#pragma once
// Reading Hugging Face .safetensors files.
//
// Format: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the raw tensor bytes; offsets count from the end of the header.
//
// Everything is checked before it is used (the file comes from the internet):
// header length against the file size, JSON syntax and UTF-8, dtypes, shapes
// whose byte size overflows or disagrees with the offsets, offsets outside the
// data or overlapping each other. Any problem is one cria::Error naming the
// file and the tensor; nothing is allocated from an unchecked size.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cria::convert {

enum class StDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

// "F32", ...
const char* st_dtype_name(StDtype t);
uint32_t st_dtype_size(StDtype t);

struct StTensor {
    std::string name;
    StDtype dtype = StDtype::F32;
    std::vector<uint64_t> shape;  // outermost first (PyTorch order)
    uint64_t begin = 0;           // offsets in the data section
    uint64_t end = 0;
    uint64_t n_elements() const;
};

class SafetensorsFile {
public:
    // Maps and validates the file.
    static std::unique_ptr<SafetensorsFile> open(const std::string& path);
    // Validates an image held in memory (viewed, not copied: `bytes` must
    // outlive the result). What the fuzzer drives.
    static std::unique_ptr<SafetensorsFile> parse(std::span<const uint8_t> bytes, const std::string& name);

    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<StTensor>& tensors() const { return tensors_; }  // in data order
    const StTensor* find(const std::string& name) const;
    std::span<const uint8_t> data(const StTensor& t) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Converts a tensor of any float dtype (F64, F32, F16, BF16) to f32.
    std::vector<float> to_f32(const StTensor& t) const;

private:
    SafetensorsFile() = default;
    void parse_header(std::span<const uint8_t> bytes);

    std::string path_;
    void* map_ = nullptr;
    size_t map_size_ = 0;
    std::span<const uint8_t> data_;
    std::vector<StTensor> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace cria::convert
