#include "cria/quantizer/imatrix.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "cria/core/error.h"
#include "cria/gguf/file.h"

namespace cria::quantizer {
namespace {

constexpr std::string_view kSumSuffix = ".in_sum2";
constexpr std::string_view kCountSuffix = ".counts";

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Bounds-checked reading of the legacy binary format.
class Reader {
public:
    Reader(const std::vector<char>& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
    bool at_end() const { return pos_ == bytes_.size(); }
    size_t remaining() const { return bytes_.size() - pos_; }
    int32_t i32(const char* what) {
        int32_t v;
        take(&v, sizeof v, what);
        return v;
    }
    std::string string(size_t n, const char* what) {
        if (n > remaining()) fail(what);
        std::string s(n, '\0');
        take(s.data(), n, what);
        return s;
    }
    void floats(float* dst, size_t n, const char* what) {
        if (n > (bytes_.size() - pos_) / sizeof(float)) fail(what);
        take(dst, n * sizeof(float), what);
    }
    [[noreturn]] void fail(const char* what) const {
        throw Error("imatrix '" + path_ + "': file ends inside " + what + " (byte " + std::to_string(pos_) +
                    " of " + std::to_string(bytes_.size()) + ")");
    }

private:
    void take(void* dst, size_t n, const char* what) {
        if (n > bytes_.size() - pos_) fail(what);
        std::memcpy(dst, bytes_.data() + pos_, n);
        pos_ += n;
    }
    const std::vector<char>& bytes_;
    const std::string& path_;
    size_t pos_ = 0;
};

void check_finite(const std::string& path, const std::string& name, const std::vector<float>& v) {
    for (float f : v)
        if (!std::isfinite(f)) throw Error("imatrix '" + path + "': entry '" + name + "' holds a non-finite value");
}

ImportanceMatrix load_legacy(const std::string& path, const std::vector<char>& bytes) {
    Reader in(bytes, path);
    ImportanceMatrix m;
    m.legacy = true;
    const int32_t n_entries = in.i32("the entry count");
    if (n_entries <= 0) throw Error("imatrix '" + path + "': entry count " + std::to_string(n_entries) + " is not positive");
    for (int32_t e = 0; e < n_entries; ++e) {
        const int32_t name_len = in.i32("an entry name length");
        if (name_len <= 0 || name_len > 4096)
            throw Error("imatrix '" + path + "': entry " + std::to_string(e) + " has a name length of " +
                        std::to_string(name_len));
        std::string name = in.string(static_cast<size_t>(name_len), "an entry name");
        const int32_t ncall = in.i32("a call count");
        const int32_t nval = in.i32("a value count");
        if (nval <= 0) throw Error("imatrix '" + path + "': entry '" + name + "' has " + std::to_string(nval) + " values");
        // Checked before allocating: a hostile count must not reserve gigabytes.
        if (static_cast<uint64_t>(nval) > in.remaining() / sizeof(float)) in.fail("the values of an entry");
        std::vector<float> values(static_cast<size_t>(nval));
        in.floats(values.data(), values.size(), "the values of an entry");
        // Stored values are sums over all calls; the quantizer wants the mean.
        if (ncall > 0)
            for (float& v : values) v /= static_cast<float>(ncall);
        check_finite(path, name, values);
        if (!m.values.emplace(name, std::move(values)).second)
            throw Error("imatrix '" + path + "': entry '" + name + "' appears twice");
    }
    if (!in.at_end()) {
        m.chunk_count = in.i32("the chunk count");
        const int32_t len = in.i32("the dataset name length");
        if (len < 0 || len > (1 << 20)) throw Error("imatrix '" + path + "': bad dataset name length " + std::to_string(len));
        m.datasets.push_back(in.string(static_cast<size_t>(len), "the dataset name"));
    }
    return m;
}

ImportanceMatrix load_gguf(const std::string& path) {
    auto file = gguf::File::open(path);
    ImportanceMatrix m;
    if (const gguf::Value* v = file->find("imatrix.datasets"); v && v->as_string_array()) m.datasets = *v->as_string_array();
    if (auto c = file->get_u64("imatrix.chunk_count")) m.chunk_count = static_cast<int64_t>(*c);
    size_t n_sums = 0;
    for (const gguf::TensorInfo& sums : file->tensors()) {
        if (!ends_with(sums.name, kSumSuffix)) continue;
        ++n_sums;
        const std::string name = sums.name.substr(0, sums.name.size() - kSumSuffix.size());
        const gguf::TensorInfo* counts = file->find_tensor(name + std::string(kCountSuffix));
        if (!counts) throw Error("imatrix '" + path + "': '" + sums.name + "' has no matching '" + name + ".counts'");
        if (sums.type != ElementType::F32 || counts->type != ElementType::F32)
            throw Error("imatrix '" + path + "': tensors of '" + name + "' must be f32");
        const uint64_t n_mat = counts->n_elements();
        if (n_mat == 0 || sums.n_elements() % n_mat != 0 || sums.ne[1] * sums.ne[2] * sums.ne[3] != n_mat)
            throw Error("imatrix '" + path + "': '" + name + "' has " + std::to_string(sums.n_elements()) +
                        " sums for " + std::to_string(n_mat) + " counts");
        const uint64_t ne0 = sums.ne[0];
        std::vector<float> s(sums.n_elements()), c(n_mat);
        std::memcpy(s.data(), file->tensor_data(sums).data(), s.size() * sizeof(float));
        std::memcpy(c.data(), file->tensor_data(*counts).data(), c.size() * sizeof(float));
        check_finite(path, name, c);
        for (uint64_t j = 0; j < n_mat; ++j)
            for (uint64_t i = 0; i < ne0; ++i) s[j * ne0 + i] = c[j] > 0.0f ? s[j * ne0 + i] / c[j] : 1.0f;
        check_finite(path, name, s);
        m.values.emplace(name, std::move(s));
    }
    if (n_sums == 0) throw Error("imatrix '" + path + "': GGUF file holds no '*.in_sum2' tensors (not an imatrix?)");
    return m;
}

}  // namespace

ImportanceMatrix load_imatrix(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("imatrix '" + path + "': cannot open: " + std::strerror(errno));
    char magic[4] = {};
    in.read(magic, 4);
    if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf(path);
    in.clear();
    in.seekg(0);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return load_legacy(path, bytes);
}

void save_legacy_imatrix(const std::string& path, const std::map<std::string, std::vector<float>>& sums, int32_t calls,
                         const std::string& dataset, int32_t chunk_count) {
    std::ofstream out(path, std::ios::binary);
    auto put = [&](int32_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<int32_t>(sums.size()));
    for (const auto& [name, values] : sums) {
        put(static_cast<int32_t>(name.size()));
        out.write(name.data(), static_cast<std::streamsize>(name.size()));
        put(calls);
        put(static_cast<int32_t>(values.size()));
        out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
    }
    put(chunk_count);
    put(static_cast<int32_t>(dataset.size()));
    out.write(dataset.data(), static_cast<std::streamsize>(dataset.size()));
    if (!out) throw Error("imatrix '" + path + "': write failed");
}

}  // namespace cria::quantizer
