#pragma once
// Builds GGUF files byte by byte, so tests can make exactly the malformed
// file they need (wrong counts, bad lengths, odd types) without the writer's
// own validation getting in the way.

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace cria::test {

class GgufBytes {
public:
    std::vector<uint8_t> bytes;

    template <class T>
    GgufBytes& put(T v) {
        const size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &v, sizeof(T));
        return *this;
    }
    GgufBytes& u32(uint32_t v) { return put(v); }
    GgufBytes& u64(uint64_t v) { return put(v); }
    GgufBytes& raw(const std::string& s) {
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    GgufBytes& str(const std::string& s) { return u64(s.size()).raw(s); }

    // "GGUF", version, tensor count, key/value count.
    GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
    }
    GgufBytes& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
    GgufBytes& kv_str(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
    // One tensor info with the given dims, type id and data offset.
    GgufBytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
    GgufBytes& pad(size_t alignment = 32) {
        while (bytes.size() % alignment) bytes.push_back(0);
        return *this;
    }
    GgufBytes& zeros(size_t n) {
        bytes.insert(bytes.end(), n, 0);
        return *this;
    }
    std::span<const uint8_t> span() const { return bytes; }
};

}  // namespace cria::test
