#pragma once
// The command messages rank 0 sends to the other ranks, as flat bytes: a
// writer that appends values and a reader that checks every read against
// the message's size (a short message is an error, never a read past it).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cria/core/error.h"

namespace cria::distributed {

enum class Command : int32_t { LoadModel = 1, CreateContext, DestroyContext, Decode, MemoryOp, Shutdown, SaveSequence, RestoreSequence, SetCapture, KeepState, LoadKeptState, DropKeptState, SetLora };

class Writer {
public:
    template <typename T>
    Writer& value(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        append(&v, sizeof(T));
        return *this;
    }
    template <typename T>
    Writer& array(std::span<const T> v) {
        value(static_cast<uint64_t>(v.size()));
        append(v.data(), v.size_bytes());
        return *this;
    }
    Writer& text(const std::string& s) { return array(std::span<const char>(s.data(), s.size())); }
    const std::vector<std::byte>& bytes() const { return bytes_; }

private:
    void append(const void* p, size_t n) {
        const size_t at = bytes_.size();
        bytes_.resize(at + n);
        if (n > 0) std::memcpy(bytes_.data() + at, p, n);
    }
    std::vector<std::byte> bytes_;
};

class Reader {
public:
    explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
    template <typename T>
    T value() {
        T v;
        take(&v, sizeof(T));
        return v;
    }
    template <typename T>
    std::vector<T> array() {
        const auto n = value<uint64_t>();
        if (n > (bytes_.size() - at_) / sizeof(T)) throw Error("pipeline message: an array runs past the message");
        std::vector<T> v(static_cast<size_t>(n));
        take(v.data(), v.size() * sizeof(T));
        return v;
    }
    std::string text() {
        const std::vector<char> c = array<char>();
        return {c.begin(), c.end()};
    }

private:
    void take(void* dst, size_t n) {
        if (n > bytes_.size() - at_) throw Error("pipeline message: shorter than its contents");
        if (n > 0) std::memcpy(dst, bytes_.data() + at_, n);  // an empty array has no buffer
        at_ += n;
    }
    std::span<const std::byte> bytes_;
    size_t at_ = 0;
};

}  // namespace cria::distributed
