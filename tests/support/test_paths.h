#pragma once
// Where tests find the bundled models and data, and where they may write.

#include <filesystem>
#include <string>

namespace cria::test {

std::filesystem::path source_dir();                      // repository root
std::filesystem::path data_path(const std::string& rel); // tests/data/<rel>
std::filesystem::path model_path(const std::string& rel);// models/<rel>

// llama.cpp's architecture fixtures (random-weight GGUFs with the logits
// llama.cpp computes for them): $CRIA_ARCH_FIXTURES when set, else
// ../shared/testdata/arch-fixtures beside the checkout. Empty when absent
// (a clone without ../shared): tests then skip, saying so.
std::filesystem::path arch_fixtures_dir();

// llama.cpp's vision projector fixtures (mmproj files, images, preprocessed
// pixels and embeddings): $CRIA_MMPROJ_FIXTURES when set, else
// ../shared/testdata/mmproj-fixtures beside the checkout. Empty when absent.
std::filesystem::path mmproj_fixtures_dir();

// A fresh directory for this test process, removed when the process exits.
std::filesystem::path temp_dir();

}  // namespace cria::test
