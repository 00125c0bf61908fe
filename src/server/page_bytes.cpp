#include "cria/server/page_bytes.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

#include "cria/core/error.h"

namespace cria::server {

PageBytes::PageBytes(std::span<const uint8_t> bytes) : size_(bytes.size()) {
    if (size_ == 0) return;
    if (size_ >= kMapFrom) {
        void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw Error("cannot map " + std::to_string(size_) + " bytes for a saved state");
        data_ = static_cast<uint8_t*>(p);
        mapped_ = true;
    } else {
        data_ = new (std::nothrow) uint8_t[size_];
        if (data_ == nullptr) throw Error("cannot allocate " + std::to_string(size_) + " bytes for a saved state");
    }
    std::memcpy(data_, bytes.data(), size_);
}

PageBytes::PageBytes(PageBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

PageBytes& PageBytes::operator=(PageBytes&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, false);
    }
    return *this;
}

PageBytes::~PageBytes() { release(); }

void PageBytes::release() noexcept {
    if (data_ == nullptr) return;
    if (mapped_) ::munmap(data_, size_);
    else delete[] data_;
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
}

}  // namespace cria::server
