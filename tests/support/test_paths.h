#pragma once
// Where tests find the bundled models and data, and where they may write.

#include <filesystem>
#include <string>

namespace cria::test {

std::filesystem::path source_dir();                      // repository root
std::filesystem::path data_path(const std::string& rel); // tests/data/<rel>
std::filesystem::path model_path(const std::string& rel);// models/<rel>

// A fresh directory for this test process, removed when the process exits.
std::filesystem::path temp_dir();

}  // namespace cria::test
