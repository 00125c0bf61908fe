#include "cria/memory/state_section.h"

#include <cstdio>

#include "cria/core/error.h"

namespace cria::memory {

std::string tag_name(uint32_t tag) {
    std::string s;
    for (int i = 0; i < 4; ++i) {
        const char c = static_cast<char>(tag >> (8 * i) & 0xff);
        if (c < 0x20 || c > 0x7e) {
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", tag);
            return hex;
        }
        s += c;
    }
    return s;
}

void ByteWriter::bytes(const void* data, size_t n) {
    // Out of line, resize + memcpy: GCC 12 sees a false overflow in an inlined vector::insert.
    const size_t at = buf_.size();
    buf_.resize(at + n);
    if (n > 0) std::memcpy(buf_.data() + at, data, n);
}

void ByteReader::bytes(void* out, size_t n) {
    if (n > size_ - at_) throw Error(what_ + " is truncated");
    if (n > 0) std::memcpy(out, data_ + at_, n);
    at_ += n;
}

uint64_t sections_bytes(const std::vector<Section>& sections) {
    uint64_t n = sizeof(uint32_t);
    for (const Section& s : sections) n += 2 * sizeof(uint32_t) + sizeof(uint64_t) + s.payload.size();
    return n;
}

void write_sections(ByteWriter& w, const std::vector<Section>& sections) {
    w.reserve_more(sections_bytes(sections));
    w.value(static_cast<uint32_t>(sections.size()));
    for (const Section& s : sections) {
        w.value(s.tag);
        w.value(s.version);
        w.value(static_cast<uint64_t>(s.payload.size()));
        w.bytes(s.payload.data(), s.payload.size());
    }
}

std::vector<Section> read_sections(ByteReader& r, uint32_t max_count, uint64_t max_payload) {
    const auto count = r.value<uint32_t>();
    if (count > max_count)
        throw Error("the saved state has " + std::to_string(count) + " sections; this memory has " +
                    std::to_string(max_count));
    std::vector<Section> out(count);
    uint64_t total = 0;
    for (Section& s : out) {
        s.tag = r.value<uint32_t>();
        s.version = r.value<uint32_t>();
        const auto size = r.value<uint64_t>();
        if (size > max_payload - total)
            throw Error("the saved state's section " + tag_name(s.tag) + " is larger than this memory could hold");
        if (size > r.left()) throw Error("the saved state is truncated");
        total += size;
        s.payload.resize(static_cast<size_t>(size));
        r.bytes(s.payload.data(), s.payload.size());
    }
    return out;
}

}  // namespace cria::memory
