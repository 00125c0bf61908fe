#pragma once
// Backslash escapes in command-line text, as llama.cpp's -e/--escape
// (string_process_escapes, on by default) turns them into characters:
// \n \r \t \' \" \\ and \xHH; any other escape is kept as written.

#include <string>

namespace cria {

std::string process_escapes(const std::string& text);

}  // namespace cria
