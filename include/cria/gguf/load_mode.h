#pragma once
// How a GGUF file's tensor data is brought into memory (like llama.cpp's
// --load-mode): mapped, read, pinned, or read with direct I/O.

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace cria::gguf {

enum class LoadMode {
    Auto,       // mmap when the file can be mapped, otherwise read into memory
    None,       // read everything into memory, no mapping
    Mmap,       // map the file read-only; pages come in on first touch
    Mlock,      // read into memory and lock it there (never swapped out)
    MmapMlock,  // map the file and lock the mapping into memory
    Dio,        // read with O_DIRECT (bypasses the page cache); falls back to plain reads where refused
};

// "auto", "none", "mmap", "mlock", "mmap+mlock", "dio" (case-insensitive);
// nothing for any other word.
std::optional<LoadMode> parse_load_mode(std::string_view text);
std::string_view load_mode_name(LoadMode mode);

// Called now and then while tensor data is read into memory (not for mmap):
// bytes done so far out of the total.
using ProgressCallback = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

}  // namespace cria::gguf
