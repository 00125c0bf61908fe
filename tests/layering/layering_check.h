#pragma once
// The layering rule, checked on the source tree: a module includes only its
// own headers and those of the modules it links (directly or through them),
// and tests/<name>/ only what test_<name> links. Which module links which is
// read from the file the build writes (cria_write_layering_file in
// cmake/CriaModules.cmake), so the rule and the build cannot drift apart.
//
// Linking alone does not enforce this: include/ is one include directory and
// src/ is on every module's private path, so `#include "cria/runtime/..."`
// compiles in any module whose callers happen to link the runtime.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cria::test::layering {

struct Declarations {
    std::map<std::string, std::vector<std::string>> module_deps;  // module -> the cria modules it links
    std::map<std::string, std::vector<std::string>> test_libs;    // tests/<name> -> the cria modules test_<name> links
};

// Parses the "module NAME DEP..." / "tests NAME LIB..." lines. Throws
// std::runtime_error when the file cannot be read or a line is malformed.
Declarations read_declarations(const std::filesystem::path& file);

// `roots` and everything they link, transitively (unknown names kept as they are).
std::set<std::string> closure(const Declarations& declarations, const std::vector<std::string>& roots);

struct Violation {
    std::string file;      // relative to the source root
    int line = 0;
    std::string include;   // as written
    std::string owner;     // the module (or test folder) the file belongs to
    std::string target;    // the module the include reaches
    std::string where() const { return file + ":" + std::to_string(line); }
};

struct Report {
    int files_scanned = 0;
    std::vector<Violation> violations;
};

// Scans src/<module>/, include/cria/<module>/ and tests/<name>/ under `root`
// for every declared module and test folder.
Report check_tree(const std::filesystem::path& root, const Declarations& declarations);

}  // namespace cria::test::layering
