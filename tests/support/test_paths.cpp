#include "support/test_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace cria::test {
namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() / ("cria-test-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

std::filesystem::path source_dir() { return CRIA_SOURCE_DIR; }
std::filesystem::path data_path(const std::string& rel) { return source_dir() / "tests" / "data" / rel; }
std::filesystem::path model_path(const std::string& rel) { return source_dir() / "models" / rel; }

std::filesystem::path arch_fixtures_dir() {
    std::filesystem::path dir;
    if (const char* env = std::getenv("CRIA_ARCH_FIXTURES"); env != nullptr && *env != '\0')
        dir = env;
    else
        dir = source_dir().parent_path() / "shared" / "testdata" / "arch-fixtures";
    std::error_code ec;
    return std::filesystem::is_directory(dir, ec) ? dir : std::filesystem::path{};
}

std::filesystem::path mmproj_fixtures_dir() {
    std::filesystem::path dir;
    if (const char* env = std::getenv("CRIA_MMPROJ_FIXTURES"); env != nullptr && *env != '\0')
        dir = env;
    else
        dir = source_dir().parent_path() / "shared" / "testdata" / "mmproj-fixtures";
    std::error_code ec;
    return std::filesystem::is_directory(dir, ec) ? dir : std::filesystem::path{};
}

std::filesystem::path temp_dir() {
    static TempDir dir;
    return dir.path;
}

}  // namespace cria::test
