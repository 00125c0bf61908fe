#include "cria/gguf/fingerprint.h"

#include <algorithm>
#include <span>

#include "cria/gguf/file.h"

namespace cria::gguf {
namespace {

// FNV-1a, 64 bits: the same hash the slot files' checksum uses.
struct Fnv1a {
    uint64_t h = 1469598103934665603ull;
    void add(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
    template <typename T>
    void add_value(T v) { add(&v, sizeof v); }
};

constexpr size_t kSampleBytes = 4096;

}  // namespace

uint64_t content_fingerprint(const File& file) {
    Fnv1a f;
    for (const TensorInfo& t : file.tensors()) {
        f.add_value(static_cast<uint64_t>(t.name.size()));
        f.add(t.name.data(), t.name.size());
        f.add_value(static_cast<uint32_t>(t.type));
        for (uint64_t n : t.ne) f.add_value(n);
        f.add_value(t.offset);
        f.add_value(t.n_bytes);
        const std::span<const uint8_t> data = file.tensor_data(t);
        if (data.size() <= 3 * kSampleBytes) {
            f.add(data.data(), data.size());
            continue;
        }
        const size_t middle = data.size() / 2 - kSampleBytes / 2;
        for (size_t at : {size_t{0}, middle, data.size() - kSampleBytes}) f.add(data.data() + at, kSampleBytes);
    }
    return f.h;
}

std::string file_base_name(const File& file) {
    const std::string& path = file.path();
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace cria::gguf
