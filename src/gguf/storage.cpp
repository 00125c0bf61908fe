// File mappings and aligned buffers for tensor data.

#include "gguf/storage.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "cria/core/error.h"

namespace cria::gguf {

std::string TensorStorage::lock() {
    if (locked_ || size() == 0) return {};
    if (::mlock(data(), size()) != 0) {
        const int err = errno;
        return std::string("mlock of ") + std::to_string(size()) + " bytes refused: " + std::strerror(err) +
               (err == ENOMEM || err == EPERM ? " (raise the locked-memory limit, e.g. `ulimit -l unlimited`)" : "") +
               "; continuing without locking";
    }
    locked_ = true;
    return {};
}

void TensorStorage::unlock() {
    if (locked_) ::munlock(data(), size());
    locked_ = false;
}

MappedStorage::MappedStorage(int fd, size_t size, const std::string& path) : size_(size) {
    if (size == 0) return;  // nothing to map; data() is null and size() zero
    addr_ = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (addr_ == MAP_FAILED) {
        addr_ = nullptr;
        throw Error(path + ": mmap failed: " + std::strerror(errno));
    }
}

MappedStorage::~MappedStorage() {
    unlock();
    if (addr_) ::munmap(addr_, size_);
}

BufferStorage::BufferStorage(size_t size) : size_(size) {
    if (size == 0) return;
    data_ = static_cast<uint8_t*>(::operator new(size, std::align_val_t{kPageAlignment}));
}

BufferStorage::~BufferStorage() {
    unlock();
    if (data_) ::operator delete(data_, std::align_val_t{kPageAlignment});
}

}  // namespace cria::gguf
