#include "cria/server/slot_files.h"

#include "cria/core/error.h"

namespace cria::server {

bool is_valid_slot_filename(std::string_view name) {
    if (name.empty() || name.size() > 128 || name.front() == '.') return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::string slot_file_path(const std::string& dir, std::string_view name) {
    if (!is_valid_slot_filename(name))
        throw Error("invalid slot file name: use 1..128 characters from A-Z a-z 0-9 . _ - not starting with a dot");
    if (dir.empty()) throw Error("slot saving is disabled (start the server with --slot-save-path)");
    std::string path = dir;
    if (path.back() != '/') path += '/';
    return path + std::string(name);
}

}  // namespace cria::server
