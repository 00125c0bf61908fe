// The layering rule on the real tree, and proof on a small made-up tree that
// the check does catch an upward include.
#include <gtest/gtest.h>

#include <fstream>

#include "layering/layering_check.h"
#include "support/test_paths.h"

namespace {

namespace fs = std::filesystem;
using namespace cria::test::layering;

Declarations build_declarations() {
    return read_declarations(fs::path(CRIA_BINARY_DIR) / "layering" / "modules.txt");
}

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

TEST(Layering, TheDeclarationsAreTheBuilds) {
    const Declarations d = build_declarations();
    ASSERT_TRUE(d.module_deps.count("core"));
    ASSERT_TRUE(d.module_deps.count("server"));
    const auto below_server = closure(d, d.module_deps.at("server"));
    EXPECT_TRUE(below_server.count("runtime"));
    EXPECT_TRUE(below_server.count("core"));
    EXPECT_FALSE(below_server.count("quantizer"));
    EXPECT_FALSE(closure(d, d.module_deps.at("core")).count("gguf"));
    ASSERT_TRUE(d.test_libs.count("runtime"));
}

TEST(Layering, NoModuleOrTestIncludesAboveItself) {
    const Report report = check_tree(cria::test::source_dir(), build_declarations());
    EXPECT_GT(report.files_scanned, 300) << "the scan found too few files: is the source root right?";
    for (const auto& v : report.violations)
        ADD_FAILURE() << v.where() << ": #include \"" << v.include << "\" reaches " << v.target << ", which "
                      << v.owner << " does not link (see its cria_module / cria_module_tests line in CMakeLists)";
}

TEST(Layering, AnUpwardIncludeIsNamedWithFileAndLine) {
    const fs::path root = cria::test::temp_dir() / "layering-tree";
    Declarations d;
    d.module_deps["low"] = {};
    d.module_deps["high"] = {"low"};
    d.test_libs["low"] = {"low"};
    write_file(root / "include/cria/low/low.h", "#pragma once\n");
    write_file(root / "include/cria/high/high.h", "#pragma once\n#include \"cria/low/low.h\"\n");
    write_file(root / "src/high/private.h", "#pragma once\n");
    write_file(root / "src/low/low.cpp", "#include \"cria/low/low.h\"\n#include <vector>\n  #  include \"cria/high/high.h\"\n");
    // A file beside the includer wins over the include path, as for the compiler.
    write_file(root / "src/low/high/private.h", "#pragma once\n");
    write_file(root / "src/low/uses_local.cpp", "#include \"high/private.h\"\n");
    write_file(root / "tests/low/low_test.cpp", "#include \"cria/low/low.h\"\n#include \"high/private.h\"\n");

    const Report report = check_tree(root, d);
    EXPECT_EQ(report.files_scanned, 7);
    ASSERT_EQ(report.violations.size(), 2u);
    EXPECT_EQ(report.violations[0].where(), "src/low/low.cpp:3");
    EXPECT_EQ(report.violations[0].target, "high");
    EXPECT_EQ(report.violations[1].where(), "tests/low/low_test.cpp:2");
    EXPECT_EQ(report.violations[1].owner, "tests/low");
}

TEST(Layering, AMalformedDeclarationIsRefused) {
    const fs::path file = cria::test::temp_dir() / "bad-modules.txt";
    write_file(file, "module core\nlibrary x y\n");
    EXPECT_THROW(read_declarations(file), std::runtime_error);
    EXPECT_THROW(read_declarations(file.string() + ".missing"), std::runtime_error);
}

}  // namespace
