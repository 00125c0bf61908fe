#include "layering/layering_check.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace cria::test::layering {

namespace fs = std::filesystem;

Declarations read_declarations(const fs::path& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file.string() + " (written when CMake configures the build)");
    Declarations d;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        std::istringstream words(line);
        std::string kind, name, dep;
        if (!(words >> kind)) continue;
        if (!(words >> name) || (kind != "module" && kind != "tests"))
            throw std::runtime_error(file.string() + ":" + std::to_string(number) + ": expected 'module|tests NAME DEP...'");
        auto& deps = kind == "module" ? d.module_deps[name] : d.test_libs[name];
        while (words >> dep) deps.push_back(dep);
    }
    return d;
}

std::set<std::string> closure(const Declarations& declarations, const std::vector<std::string>& roots) {
    std::set<std::string> seen;
    std::vector<std::string> todo(roots.begin(), roots.end());
    while (!todo.empty()) {
        const std::string name = todo.back();
        todo.pop_back();
        if (!seen.insert(name).second) continue;
        if (auto it = declarations.module_deps.find(name); it != declarations.module_deps.end())
            todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
    return seen;
}

namespace {

// Who a file of the tree belongs to: "Y" for src/Y/ and include/cria/Y/,
// "tests/Y" for tests/Y/, "" for anything else.
std::string owner_of(const fs::path& relative) {
    std::vector<std::string> parts;
    for (const auto& p : relative) parts.push_back(p.string());
    if (parts.size() >= 3 && parts[0] == "include" && parts[1] == "cria") return parts[2];
    if (parts.size() >= 2 && parts[0] == "src") return parts[1];
    if (parts.size() >= 2 && parts[0] == "tests") return "tests/" + parts[1];
    return "";
}

struct Scope {
    std::string owner;                     // what the scanned files belong to
    std::set<std::string> allowed;         // owners they may include
    std::vector<fs::path> include_dirs;    // the -I directories of their target, in order
};

// The owner of the file an include reaches, found as the compiler would:
// a quoted include first beside the including file, then on the include
// path. An include found nowhere (a system or generated header) still
// counts when it names a module ("cria/Y/..." or "Y/...").
std::string reached_owner(const fs::path& root, const fs::path& including, const std::string& spelled, bool quoted,
                          const Scope& scope, const std::set<std::string>& modules) {
    std::vector<fs::path> dirs;
    if (quoted) dirs.push_back(including.parent_path());
    dirs.insert(dirs.end(), scope.include_dirs.begin(), scope.include_dirs.end());
    for (const auto& dir : dirs) {
        const fs::path candidate = dir / spelled;
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec))
            return owner_of(fs::relative(fs::weakly_canonical(candidate), fs::weakly_canonical(root)));
    }
    // Only a path names a module: <memory> is the standard header.
    std::vector<std::string> parts;
    for (const auto& part : fs::path(spelled)) parts.push_back(part.string());
    if (parts.size() >= 3 && parts[0] == "cria") return modules.count(parts[1]) ? parts[1] : "";
    if (parts.size() >= 2) return modules.count(parts[0]) ? parts[0] : "";
    return "";
}

bool is_source(const fs::path& p) {
    const std::string ext = p.extension().string();
    return ext == ".h" || ext == ".hpp" || ext == ".cpp" || ext == ".cc" || ext == ".inc";
}

void scan_folder(const fs::path& root, const fs::path& folder, const Scope& scope, const std::set<std::string>& modules,
                 Report& report) {
    static const std::regex include_line(R"(^\s*#\s*include\s*(["<])([^">]+)[">])");
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) return;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (!entry.is_regular_file() || !is_source(entry.path())) continue;
        ++report.files_scanned;
        std::ifstream in(entry.path());
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            std::smatch m;
            if (!std::regex_search(line, m, include_line)) continue;
            const std::string spelled = m[2];
            const std::string target = reached_owner(root, entry.path(), spelled, m[1] == "\"", scope, modules);
            if (target.empty() || target == scope.owner || scope.allowed.count(target)) continue;
            report.violations.push_back(
                {fs::relative(entry.path(), root).string(), number, spelled, scope.owner, target});
        }
    }
}

}  // namespace

Report check_tree(const fs::path& root, const Declarations& declarations) {
    std::set<std::string> modules;
    for (const auto& [name, deps] : declarations.module_deps) modules.insert(name);
    Report report;
    // Module targets: include/ publicly, src/ privately (cria_module).
    for (const auto& [name, deps] : declarations.module_deps) {
        const Scope scope{name, closure(declarations, deps), {root / "include", root / "src"}};
        scan_folder(root, root / "src" / name, scope, modules, report);
        scan_folder(root, root / "include" / "cria" / name, scope, modules, report);
    }
    // Test binaries: src/ and tests/ (cria_module_tests), include/ through
    // the libraries. Test helpers in tests/support/ are linked by all.
    for (const auto& [name, libs] : declarations.test_libs) {
        Scope scope{"tests/" + name, closure(declarations, libs), {root / "src", root / "tests", root / "include"}};
        scope.allowed.insert("tests/support");
        scan_folder(root, root / "tests" / name, scope, modules, report);
    }
    // Directory walks come in no particular order; reports should not.
    std::sort(report.violations.begin(), report.violations.end(),
              [](const Violation& a, const Violation& b) { return std::tie(a.file, a.line) < std::tie(b.file, b.line); });
    return report;
}

}  // namespace cria::test::layering
