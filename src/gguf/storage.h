#pragma once
// Owners of the memory that holds tensor data: a read-only file mapping or a
// page-aligned heap buffer, optionally locked into RAM.

#include <cstddef>
#include <cstdint>
#include <string>

namespace cria::gguf {

class TensorStorage {
public:
    virtual ~TensorStorage() = default;
    virtual const uint8_t* data() const = 0;
    virtual size_t size() const = 0;
    // Pins the memory with mlock(). Returns an explanation when refused.
    std::string lock();

protected:
    bool locked_ = false;
    void unlock();
};

// A read-only shared mapping of a whole file.
class MappedStorage final : public TensorStorage {
public:
    // Throws cria::Error (naming `path`) when the mapping fails.
    MappedStorage(int fd, size_t size, const std::string& path);
    ~MappedStorage() override;
    const uint8_t* data() const override { return static_cast<const uint8_t*>(addr_); }
    size_t size() const override { return size_; }

private:
    void* addr_ = nullptr;
    size_t size_ = 0;
};

// Heap memory aligned to a page (what O_DIRECT reads need).
class BufferStorage final : public TensorStorage {
public:
    explicit BufferStorage(size_t size);
    ~BufferStorage() override;
    const uint8_t* data() const override { return data_; }
    uint8_t* mutable_data() { return data_; }
    size_t size() const override { return size_; }

private:
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

inline constexpr size_t kPageAlignment = 4096;

}  // namespace cria::gguf
