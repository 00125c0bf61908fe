#pragma once
// Writes small Hugging Face checkpoints for convert tests: config.json,
// model.safetensors with tensors of any dtype, and the austen-7m tokenizer.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "support/test_paths.h"

namespace cria::convert::test_checkpoint {

struct Tensor {
    std::string name;
    std::vector<uint64_t> shape;  // PyTorch order
    std::string dtype = "F32";
    std::vector<uint8_t> bytes;

    std::vector<float> floats() const {  // F32 tensors only
        std::vector<float> v(bytes.size() / 4);
        std::memcpy(v.data(), bytes.data(), bytes.size());
        return v;
    }
};

inline uint64_t count(const std::vector<uint64_t>& shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
}

inline Tensor f32(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& values) {
    Tensor t{name, std::move(shape), "F32", std::vector<uint8_t>(values.size() * 4)};
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

inline Tensor random_f32(const std::string& name, std::vector<uint64_t> shape, uint32_t seed, float scale = 0.5f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(count(shape));
    for (float& x : v) x = dist(rng);
    return f32(name, std::move(shape), v);
}

inline Tensor random_u8(const std::string& name, std::vector<uint64_t> shape, uint32_t seed, int lo = 0, int hi = 255) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> dist(lo, hi);
    Tensor t{name, std::move(shape), "U8", {}};
    t.bytes.resize(count(t.shape));
    for (uint8_t& b : t.bytes) b = static_cast<uint8_t>(dist(rng));
    return t;
}

inline void write_safetensors(const std::filesystem::path& path, const std::vector<Tensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const Tensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    const std::string h = header.dump();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const Tensor& t : tensors)
        out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}

// A checkpoint directory under the test's temp dir with the austen tokenizer.
inline std::filesystem::path make_dir(const std::string& name, const nlohmann::json& config,
                                      const std::vector<Tensor>& tensors) {
    const auto dir = test::temp_dir() / name;
    std::filesystem::create_directories(dir);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
        std::filesystem::copy_file(test::model_path("austen-7m/hf") / f, dir / f,
                                   std::filesystem::copy_options::overwrite_existing);
    std::ofstream(dir / "config.json") << config.dump(2);
    write_safetensors(dir / "model.safetensors", tensors);
    return dir;
}

}  // namespace cria::convert::test_checkpoint
