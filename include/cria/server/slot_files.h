#pragma once
// Slot files are named by clients, so a name must never leave the
// configured directory: 1..128 characters from [A-Za-z0-9._-], not starting
// with a dot (no "..", no hidden files, no separators, no NUL).
#include <string>
#include <string_view>

namespace cria::server {

bool is_valid_slot_filename(std::string_view name);
// dir + "/" + name, after is_valid_slot_filename; throws cria::Error otherwise.
std::string slot_file_path(const std::string& dir, std::string_view name);

}  // namespace cria::server
