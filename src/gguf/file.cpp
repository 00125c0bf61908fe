// Opening GGUF files in each load mode, and the typed metadata getters.

#include "cria/gguf/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "cria/core/error.h"
#include "gguf/parser.h"
#include "gguf/storage.h"

namespace cria::gguf {

namespace {

// Tensor data is read in pieces this big so progress can be reported.
constexpr size_t kReadChunk = size_t{64} << 20;
// The first guess at how much of the file the metadata needs.
constexpr uint64_t kFirstPrefix = uint64_t{1} << 20;

std::string errno_text() { return std::strerror(errno); }

// Closes a file descriptor when it goes out of scope.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

// Reads exactly `n` bytes at `offset` (retrying short reads); throws on error or early EOF.
void read_exact(int fd, uint8_t* dst, uint64_t n, uint64_t offset, const std::string& path) {
    while (n > 0) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(n, kReadChunk));
        const ssize_t r = ::pread(fd, dst, want, static_cast<off_t>(offset));
        if (r < 0) {
            if (errno == EINTR) continue;
            throw Error(path + ": read failed at byte " + std::to_string(offset) + ": " + errno_text());
        }
        if (r == 0) throw Error(path + ": file ended early at byte " + std::to_string(offset) + " (truncated while reading?)");
        dst += r;
        offset += static_cast<uint64_t>(r);
        n -= static_cast<uint64_t>(r);
    }
}

// Reads [offset, offset + n) into dst in chunks, reporting progress.
void read_with_progress(int fd, uint8_t* dst, uint64_t n, uint64_t offset, const std::string& path,
                        const ProgressCallback& progress, uint64_t done_before, uint64_t total) {
    uint64_t done = 0;
    while (done < n) {
        const uint64_t chunk = std::min<uint64_t>(n - done, kReadChunk);
        read_exact(fd, dst + done, chunk, offset + done, path);
        done += chunk;
        if (progress) progress(done_before + done, total);
    }
}

}  // namespace

File::~File() = default;

std::unique_ptr<File> File::parse(std::span<const uint8_t> bytes, const std::string& name) {
    std::unique_ptr<File> file(new File());
    file->path_ = name;
    file->load_mode_ = LoadMode::None;
    Parser(bytes, bytes.size(), name).parse(*file);
    if (file->data_offset_ <= bytes.size()) file->data_ = bytes.subspan(static_cast<size_t>(file->data_offset_));
    return file;
}

std::unique_ptr<File> File::open(const std::string& path, LoadMode mode, ProgressCallback progress) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.fd < 0) throw Error(path + ": cannot open: " + errno_text());
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0) throw Error(path + ": cannot stat: " + errno_text());
    if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > std::numeric_limits<size_t>::max()) throw Error(path + ": file too large for this machine");

    std::unique_ptr<File> file(new File());
    file->path_ = path;

    // Mapped modes: parse straight from the mapping; no tensor byte is touched.
    if (mode == LoadMode::Auto || mode == LoadMode::Mmap || mode == LoadMode::MmapMlock) {
        std::unique_ptr<MappedStorage> map;
        try {
            map = std::make_unique<MappedStorage>(fd.fd, static_cast<size_t>(size), path);
        } catch (const Error& e) {
            if (mode != LoadMode::Auto) throw;
            file->warnings_.push_back(std::string(e.what()) + "; reading the file into memory instead");
            mode = LoadMode::None;
        }
        if (map) {
            Parser({map->data(), map->size()}, size, path).parse(*file);
            file->load_mode_ = mode == LoadMode::Auto ? LoadMode::Mmap : mode;
            if (mode == LoadMode::MmapMlock) {
                if (std::string why = map->lock(); !why.empty()) file->warnings_.push_back(path + ": " + why);
            }
            const uint64_t start = std::min(file->data_offset_, size);
            file->data_ = {map->data() + start, static_cast<size_t>(size - start)};
            file->storage_ = std::move(map);
            return file;
        }
    }

    // Read modes: parse from a growing prefix of the file, then read the data section.
    std::vector<uint8_t> prefix;
    uint64_t want = std::min(size, kFirstPrefix);
    for (;;) {
        prefix.resize(static_cast<size_t>(want));
        read_exact(fd.fd, prefix.data(), want, 0, path);
        try {
            Parser(prefix, size, path).parse(*file);
            break;
        } catch (const NeedMoreBytes& more) {
            want = std::min(size, std::max(more.at_least, want * 4));
        }
    }
    prefix = {};
    file->load_mode_ = mode;
    const uint64_t data_start = std::min(file->data_offset_, size);
    const uint64_t data_size = size - data_start;

    if (mode == LoadMode::Dio) {
        // O_DIRECT needs page-aligned offsets, lengths and buffers: read the
        // page-aligned range around the data section.
        const uint64_t aligned_start = data_start / kPageAlignment * kPageAlignment;
        const uint64_t aligned_end = (size + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
        auto buf = std::make_unique<BufferStorage>(static_cast<size_t>(aligned_end - aligned_start));
        const uint64_t total = size - aligned_start;
        uint64_t done = 0;
        Fd dfd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
        if (dfd.fd < 0) {
            file->warnings_.push_back(path + ": direct I/O (O_DIRECT) refused by the filesystem (" + errno_text() +
                                      "); reading through the page cache instead");
        } else {
            while (done < total) {
                const size_t want_now = static_cast<size_t>(std::min<uint64_t>(aligned_end - aligned_start - done, kReadChunk));
                const ssize_t r = ::pread(dfd.fd, buf->mutable_data() + done, want_now,
                                          static_cast<off_t>(aligned_start + done));
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) {
                    file->warnings_.push_back(path + ": direct I/O read failed (" + errno_text() +
                                              "); reading the rest through the page cache");
                    break;
                }
                if (r == 0) break;
                done += static_cast<uint64_t>(r);
                if (progress) progress(std::min(done, total), total);
                // A short read that is not page-sized means O_DIRECT hit the end of the file.
                if (static_cast<size_t>(r) % kPageAlignment != 0) break;
            }
            done = std::min(done, total);
        }
        // Whatever direct I/O did not deliver comes through the page cache.
        const bool all_direct = done >= total;
        if (!all_direct) {
            read_with_progress(fd.fd, buf->mutable_data() + done, total - done, aligned_start + done, path, progress,
                               done, total);
        }
        file->load_mode_ = all_direct ? LoadMode::Dio : LoadMode::None;
        file->data_ = {buf->data() + (data_start - aligned_start), static_cast<size_t>(data_size)};
        file->storage_ = std::move(buf);
        return file;
    }

    // None and Mlock: read the data section into a page-aligned buffer.
    auto buf = std::make_unique<BufferStorage>(static_cast<size_t>(data_size));
    read_with_progress(fd.fd, buf->mutable_data(), data_size, data_start, path, progress, 0, data_size);
    if (mode == LoadMode::Mlock) {
        if (std::string why = buf->lock(); !why.empty()) file->warnings_.push_back(path + ": " + why);
    }
    file->data_ = {buf->data(), static_cast<size_t>(data_size)};
    file->storage_ = std::move(buf);
    return file;
}

const Value* File::find(std::string_view key) const {
    auto it = metadata_index_.find(key);
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> File::tensor_data(const TensorInfo& tensor) const {
    // The parser checked every tensor lies inside the data section; the check
    // here guards against a TensorInfo that came from another file.
    if (tensor.offset > data_.size() || tensor.n_bytes > data_.size() - tensor.offset) {
        throw Error(path_ + ": tensor '" + tensor.name + "' lies outside this file's data section");
    }
    return data_.subspan(static_cast<size_t>(tensor.offset), static_cast<size_t>(tensor.n_bytes));
}

void File::release_pages(std::span<const uint8_t> bytes) const {
    if (load_mode_ != LoadMode::Mmap || bytes.empty()) return;
    if (bytes.data() < data_.data() || bytes.data() + bytes.size() > data_.data() + data_.size()) return;
    // Only whole pages inside the range: a neighbouring tensor may share the edges.
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice only
}

namespace {

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const Value& v, const char* expected) {
    std::string what = std::string(value_type_name(v.type()));
    if (v.is_array()) what += " of " + std::string(value_type_name(v.array_type()));
    throw Error(path + ": metadata key '" + std::string(key) + "' is " + what + " " + v.to_display_string(4) +
                ", expected " + expected);
}

}  // namespace

std::optional<uint64_t> File::get_u64(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto x = v->as_u64()) return x;
    wrong_type(path_, key, *v, "a non-negative integer");
}

std::optional<uint32_t> File::get_u32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto x = v->as_u64(); x && *x <= std::numeric_limits<uint32_t>::max()) return static_cast<uint32_t>(*x);
    wrong_type(path_, key, *v, "an integer in 0..4294967295 (u32)");
}

std::optional<int32_t> File::get_i32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto x = v->as_i64();
        x && *x >= std::numeric_limits<int32_t>::min() && *x <= std::numeric_limits<int32_t>::max()) {
        return static_cast<int32_t>(*x);
    }
    wrong_type(path_, key, *v, "an integer that fits in i32");
}

std::optional<float> File::get_f32(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto x = v->as_f64()) return static_cast<float>(*x);
    wrong_type(path_, key, *v, "a number");
}

std::optional<bool> File::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (auto x = v->as_bool()) return x;
    wrong_type(path_, key, *v, "a bool");
}

std::optional<std::string> File::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const std::string* s = v->as_string()) return *s;
    wrong_type(path_, key, *v, "a string");
}

uint32_t File::get_u32(std::string_view key, uint32_t fallback) const { return get_u32(key).value_or(fallback); }
uint64_t File::get_u64(std::string_view key, uint64_t fallback) const { return get_u64(key).value_or(fallback); }
int32_t File::get_i32(std::string_view key, int32_t fallback) const { return get_i32(key).value_or(fallback); }
float File::get_f32(std::string_view key, float fallback) const { return get_f32(key).value_or(fallback); }
bool File::get_bool(std::string_view key, bool fallback) const { return get_bool(key).value_or(fallback); }
std::string File::get_string(std::string_view key, const std::string& fallback) const {
    return get_string(key).value_or(fallback);
}

std::string File::architecture() const {
    const Value* v = find("general.architecture");
    if (!v) throw Error(path_ + ": metadata key 'general.architecture' is missing");
    const std::string* s = v->as_string();
    if (!s) wrong_type(path_, "general.architecture", *v, "a string");
    return *s;
}

std::string File::arch_key(std::string_view suffix) const { return architecture() + "." + std::string(suffix); }

}  // namespace cria::gguf
