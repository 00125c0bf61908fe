#pragma once
// Bytes kept for a long time and let go in an order nobody can predict (the
// prompt cache's saved states: megabytes each, of varying sizes, replaced
// as slots finish). A large one lives in its own anonymous mapping, given
// back to the system whole when it is freed: kept in malloc's heaps, such
// states leave holes between the ones still held that the heap keeps
// resident, so the process's RSS crept up while the cache stayed at its
// budget (issue #18's load test). Small ones stay on the heap, where a
// mapping's whole page would waste more than it saves.
#include <cstddef>
#include <cstdint>
#include <span>

namespace cria::server {

class PageBytes {
public:
    // At and above this size the bytes get their own mapping.
    static constexpr size_t kMapFrom = size_t{256} << 10;

    PageBytes() = default;
    // A copy of `bytes`; throws cria::Error when the memory cannot be had.
    explicit PageBytes(std::span<const uint8_t> bytes);
    PageBytes(PageBytes&& other) noexcept;
    PageBytes& operator=(PageBytes&& other) noexcept;
    PageBytes(const PageBytes&) = delete;
    PageBytes& operator=(const PageBytes&) = delete;
    ~PageBytes();

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    bool mapped() const { return mapped_; }
    std::span<const uint8_t> span() const { return {data_, size_}; }
    operator std::span<const uint8_t>() const { return span(); }

private:
    void release() noexcept;

    uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
};

}  // namespace cria::server
