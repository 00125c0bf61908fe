#pragma once
// Sections of a saved sequence state: every leaf memory writes its own
// (tag, version, payload), so a saved sequence is a list of sections and any
// mix of memories can be saved and restored. On disk a section is
//   u32 tag, u32 version, u64 payload size, payload bytes
// (little-endian, as the host writes it). Readers treat every byte as
// untrusted: running past the end throws cria::Error, never reads beyond.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace cria::memory {

constexpr uint32_t fourcc(char a, char b, char c, char d) {
    return static_cast<uint32_t>(static_cast<uint8_t>(a)) | static_cast<uint32_t>(static_cast<uint8_t>(b)) << 8 |
           static_cast<uint32_t>(static_cast<uint8_t>(c)) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(d)) << 24;
}
std::string tag_name(uint32_t tag);  // "KVAT" for fourcc('K','V','A','T'), hex for unprintable tags

struct Section {
    uint32_t tag = 0;
    uint32_t version = 0;
    std::vector<uint8_t> payload;
    size_t n_positions = 0;  // positions the section holds (not stored: reported back to the saver)
};

// What a memory may accept when it reads a saved sequence.
struct LoadLimits {
    uint32_t max_positions = 0;  // > 0: refuse positions at or beyond it
};

// A saved sequence that a memory has read and checked, ready to load.
class LoadedSequence {
public:
    virtual ~LoadedSequence() = default;
};

class ByteWriter {
public:
    void bytes(const void* data, size_t n);
    template <typename T>
    void value(T v) { bytes(&v, sizeof v); }
    // Room for `n` more bytes at once: a writer that knows its size ends with
    // a buffer of that size, not one doubled on the way (a doubled one kept
    // in the prompt cache held twice the bytes it counted).
    void reserve_more(size_t n) { buf_.reserve(buf_.size() + n); }
    std::vector<uint8_t>& buffer() { return buf_; }

private:
    std::vector<uint8_t> buf_;
};

// Reads from bytes it does not own; running past the end throws cria::Error("<what> is truncated").
class ByteReader {
public:
    ByteReader(const uint8_t* data, size_t size, std::string what) : data_(data), size_(size), what_(std::move(what)) {}
    void bytes(void* out, size_t n);
    template <typename T>
    T value() {
        T v;
        bytes(&v, sizeof v);
        return v;
    }
    size_t offset() const { return at_; }
    size_t left() const { return size_ - at_; }

private:
    const uint8_t* data_;
    size_t size_;
    size_t at_ = 0;
    std::string what_;
};

// The framing of a list of sections: u32 count, then each section.
void write_sections(ByteWriter& w, const std::vector<Section>& sections);
// The bytes write_sections adds for `sections`.
uint64_t sections_bytes(const std::vector<Section>& sections);
// Throws cria::Error for more than max_count sections, a payload over
// max_payload bytes in all, or truncated input.
std::vector<Section> read_sections(ByteReader& r, uint32_t max_count, uint64_t max_payload);

}  // namespace cria::memory
