#include "cria/convert/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/core/float16.h"

namespace cria::convert {
namespace {

// Headers of real checkpoints are a few hundred KiB; 100 MiB is what the
// reference implementation (safetensors crate) accepts at most.
constexpr uint64_t kMaxHeader = 100ull << 20;

struct DtypeInfo {
    StDtype type;
    const char* name;
    uint32_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {StDtype::F64, "F64", 8}, {StDtype::F32, "F32", 4},   {StDtype::F16, "F16", 2}, {StDtype::BF16, "BF16", 2},
    {StDtype::I64, "I64", 8}, {StDtype::I32, "I32", 4},   {StDtype::I16, "I16", 2}, {StDtype::I8, "I8", 1},
    {StDtype::U8, "U8", 1},   {StDtype::BOOL, "BOOL", 1}, {StDtype::F8_E4M3, "F8_E4M3", 1},
    {StDtype::F8_E5M2, "F8_E5M2", 1},
};

// A header value as a JSON-safe display (names may be any bytes).
std::string shown(const std::string& s) {
    std::string out = "'";
    for (char c : s.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
    return out + (s.size() > 80 ? "...'" : "'");
}

}  // namespace

const char* st_dtype_name(StDtype t) {
    for (const auto& d : kDtypes)
        if (d.type == t) return d.name;
    return "?";
}

uint32_t st_dtype_size(StDtype t) {
    for (const auto& d : kDtypes)
        if (d.type == t) return d.size;
    return 0;
}

uint64_t StTensor::n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;  // validated not to overflow when parsed
    return n;
}

SafetensorsFile::~SafetensorsFile() {
    if (map_) munmap(map_, map_size_);
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("safetensors '" + path + "': cannot open: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error("safetensors '" + path + "': not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    if (size < 8) {
        ::close(fd);
        throw Error("safetensors '" + path + "': file of " + std::to_string(size) + " bytes is too short for a header");
    }
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) throw Error("safetensors '" + path + "': cannot map: " + std::strerror(errno));
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->path_ = path;
    f->map_ = map;
    f->map_size_ = size;
    f->parse_header({static_cast<const uint8_t*>(map), size});
    return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, const std::string& name) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->path_ = name;
    f->parse_header(bytes);
    return f;
}

void SafetensorsFile::parse_header(std::span<const uint8_t> bytes) {
    const std::string where = "safetensors '" + path_ + "': ";
    if (bytes.size() < 8) throw Error(where + "too short for a header");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
    if (n > kMaxHeader) throw Error(where + "header length " + std::to_string(n) + " exceeds the 100 MiB limit");
    if (n > bytes.size() - 8)
        throw Error(where + "header length " + std::to_string(n) + " runs past the end of the file (" +
                    std::to_string(bytes.size()) + " bytes)");
    const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
    nlohmann::json header = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
    if (header.is_discarded()) throw Error(where + "header is not valid JSON (or not valid UTF-8)");
    if (!header.is_object()) throw Error(where + "header is not a JSON object");
    data_ = bytes.subspan(8 + n);

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const nlohmann::json& e = it.value();
        if (name == "__metadata__") {
            if (!e.is_object()) throw Error(where + "__metadata__ is not an object");
            for (auto m = e.begin(); m != e.end(); ++m) {
                if (!m.value().is_string()) throw Error(where + "__metadata__ value " + shown(m.key()) + " is not a string");
                metadata_[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string what = where + "tensor " + shown(name) + ": ";
        if (name.empty()) throw Error(where + "a tensor has an empty name");
        if (!e.is_object()) throw Error(what + "entry is not an object");
        StTensor t;
        t.name = name;
        const auto dtype = e.find("dtype");
        if (dtype == e.end() || !dtype->is_string()) throw Error(what + "missing dtype");
        const std::string d = dtype->get<std::string>();
        const DtypeInfo* info = nullptr;
        for (const auto& k : kDtypes)
            if (d == k.name) info = &k;
        if (!info) throw Error(what + "unknown dtype " + shown(d));
        t.dtype = info->type;
        const auto shape = e.find("shape");
        if (shape == e.end() || !shape->is_array() || shape->size() > 8) throw Error(what + "shape must be an array of at most 8 sizes");
        uint64_t count = 1;
        for (const auto& dim : *shape) {
            if (!dim.is_number_unsigned()) throw Error(what + "shape holds something other than a non-negative integer");
            const uint64_t v = dim.get<uint64_t>();
            if (v != 0 && count > UINT64_MAX / v) throw Error(what + "shape overflows 64 bits");
            count *= v;
            t.shape.push_back(v);
        }
        if (count > UINT64_MAX / info->size) throw Error(what + "byte size overflows 64 bits");
        const auto offsets = e.find("data_offsets");
        if (offsets == e.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
            !(*offsets)[1].is_number_unsigned())
            throw Error(what + "data_offsets must be two non-negative integers");
        t.begin = (*offsets)[0].get<uint64_t>();
        t.end = (*offsets)[1].get<uint64_t>();
        if (t.begin > t.end || t.end > data_.size())
            throw Error(what + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                        ") fall outside the " + std::to_string(data_.size()) + " data bytes");
        if (t.end - t.begin != count * info->size)
            throw Error(what + "holds " + std::to_string(t.end - t.begin) + " bytes but " + d + " of this shape needs " +
                        std::to_string(count * info->size));
        tensors_.push_back(std::move(t));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 0; i < tensors_.size(); ++i) {
        if (i > 0 && tensors_[i].begin < tensors_[i - 1].end)
            throw Error(where + "tensors " + shown(tensors_[i - 1].name) + " and " + shown(tensors_[i].name) +
                        " overlap");
        index_[tensors_[i].name] = i;
    }
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> SafetensorsFile::data(const StTensor& t) const {
    return data_.subspan(t.begin, t.end - t.begin);
}

std::vector<float> SafetensorsFile::to_f32(const StTensor& t) const {
    const std::span<const uint8_t> bytes = data(t);
    const size_t n = static_cast<size_t>(t.n_elements());
    std::vector<float> out(n);
    switch (t.dtype) {
        case StDtype::F32: std::memcpy(out.data(), bytes.data(), n * 4); break;
        case StDtype::F64:
            for (size_t i = 0; i < n; ++i) {
                double v;
                std::memcpy(&v, bytes.data() + i * 8, 8);
                out[i] = static_cast<float>(v);
            }
            break;
        case StDtype::F16:
        case StDtype::BF16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, bytes.data() + i * 2, 2);
                out[i] = t.dtype == StDtype::F16 ? f16_to_f32(h) : bf16_to_f32(h);
            }
            break;
        default:
            throw Error("safetensors '" + path_ + "': tensor " + shown(t.name) + " has dtype " + st_dtype_name(t.dtype) +
                        ", which cannot be converted to float");
    }
    return out;
}

}  // namespace cria::convert
