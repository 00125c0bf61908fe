#pragma once
// Reading the mmproj fixtures' files: whole files as bytes, and the numbers
// of one JSON array (the files are llama.cpp's dumps with a known layout, so
// a number scanner is enough and keeps this test free of a JSON library).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cria::test {

std::vector<uint8_t> read_bytes(const std::filesystem::path& path);
// Every number after `"key":` up to the bracket that closes its array
// (nested arrays flattened). Empty when the key is absent.
std::vector<double> json_numbers(const std::string& text, const std::string& key);
// The integer value of `"key": N`; -1 when absent.
int64_t json_int(const std::string& text, const std::string& key);

}  // namespace cria::test
