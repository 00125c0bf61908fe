// Names of the load modes, as the command line spells them.

#include "cria/gguf/load_mode.h"

#include <cctype>
#include <string>

namespace cria::gguf {

std::optional<LoadMode> parse_load_mode(std::string_view text) {
    std::string lower(text);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (LoadMode m : {LoadMode::Auto, LoadMode::None, LoadMode::Mmap, LoadMode::Mlock, LoadMode::MmapMlock,
                       LoadMode::Dio}) {
        if (lower == load_mode_name(m)) return m;
    }
    return std::nullopt;
}

std::string_view load_mode_name(LoadMode mode) {
    switch (mode) {
        case LoadMode::Auto: return "auto";
        case LoadMode::None: return "none";
        case LoadMode::Mmap: return "mmap";
        case LoadMode::Mlock: return "mlock";
        case LoadMode::MmapMlock: return "mmap+mlock";
        case LoadMode::Dio: return "dio";
    }
    return "auto";
}

}  // namespace cria::gguf
