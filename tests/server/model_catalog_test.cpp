// The router's model list: a directory's GGUF files (projectors and
// adapters left out) and llama-server's INI presets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cria/core/error.h"
#include "cria/gguf/writer.h"
#include "cria/server/model_catalog.h"
#include "support/test_paths.h"

using namespace cria::server;

namespace {

void write_gguf(const std::filesystem::path& p, const std::string& type) {
    cria::gguf::Writer w;
    w.add_metadata("general.architecture", cria::gguf::Value::string("llama"));
    w.add_metadata("general.type", cria::gguf::Value::string(type));
    w.write(p.string());
}

}  // namespace

TEST(ModelCatalog, ADirectoryListsItsModelsButNotProjectorsOrAdapters) {
    const auto dir = cria::test::temp_dir() / "catalog-dir";
    std::filesystem::create_directories(dir / "nested");
    write_gguf(dir / "zeta.gguf", "model");
    write_gguf(dir / "alpha.gguf", "model");
    write_gguf(dir / "mmproj-alpha.gguf", "mmproj");
    write_gguf(dir / "lora.gguf", "adapter");
    write_gguf(dir / "nested" / "deep.gguf", "model");  // not recursed into
    std::ofstream(dir / "notes.txt") << "x";
    const auto models = scan_models_dir(dir.string());
    ASSERT_EQ(models.size(), 2u);
    EXPECT_EQ(models[0].name, "alpha");
    EXPECT_EQ(models[1].name, "zeta");
    EXPECT_TRUE(models[0].answers_to("alpha.gguf"));
    EXPECT_THROW(scan_models_dir((dir / "missing").string()), cria::Error);
}

TEST(ModelCatalog, PresetsFollowLlamaServersIni) {
    std::vector<ModelEntry> models{{"local", "/m/local.gguf", {}, -1, -1}};
    apply_models_preset_text(R"(version = 1
; defaults for every model
[*]
ctx-size = 1024

[local]
alias = loc, l2

[custom]
model = /elsewhere/custom-q4.gguf
c = 256
np = 2
)",
                             "p.ini", models);
    ASSERT_EQ(models.size(), 2u);
    EXPECT_EQ(models[0].n_ctx, 1024);
    EXPECT_EQ(models[0].aliases, (std::vector<std::string>{"loc", "l2"}));
    EXPECT_EQ(models[1].name, "custom");
    EXPECT_EQ(models[1].path, "/elsewhere/custom-q4.gguf");
    EXPECT_EQ(models[1].n_ctx, 256);
    EXPECT_EQ(models[1].n_parallel, 2);
    EXPECT_TRUE(models[1].answers_to("custom-q4"));
}

TEST(ModelCatalog, BadPresetsSayWhatIsWrong) {
    std::vector<ModelEntry> models;
    auto message = [&](const char* text) {
        try {
            apply_models_preset_text(text, "p.ini", models);
        } catch (const cria::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message("[x]\nmodel = a.gguf\nn-gpu-layers = 99\n").find("p.ini:3: option 'n-gpu-layers'"), std::string::npos);
    EXPECT_NE(message("[y]\nalias = z\n").find("has no 'model'"), std::string::npos);
    EXPECT_NE(message("[y]\nmodel = a.gguf\nctx-size = big\n").find("not a non-negative integer"), std::string::npos);
    EXPECT_NE(message("[y\n").find("[NAME]"), std::string::npos);
    EXPECT_NE(message("just text\n").find("KEY = VALUE"), std::string::npos);
}

TEST(ModelCatalog, MemoryEstimateIsTheFileAndItsCache) {
    const auto path = cria::test::model_path("stories260K/stories260K.gguf");
    ModelEntry e{"s", path.string(), {}, -1, -1};
    const uint64_t file = std::filesystem::file_size(path);
    const uint64_t at_512 = estimate_model_bytes(e, 512, 1);
    const uint64_t at_1024 = estimate_model_bytes(e, 1024, 1);
    EXPECT_GT(at_512, file);
    EXPECT_EQ(at_1024 - file, 2 * (at_512 - file));  // the cache grows with the cells
    EXPECT_GT(available_memory_bytes(), 0u);
}

TEST(ModelCatalog, JsonPresetsAreTheIniSectionsAsAnObject) {
    const auto path = cria::test::temp_dir() / "preset.json";
    std::ofstream(path) << R"({"*": {"ctx-size": 512},
 "custom": {"model": "/elsewhere/c.gguf", "alias": ["c1", "c2"], "parallel": 3}})";
    std::vector<ModelEntry> models;
    apply_models_preset(path.string(), models);
    ASSERT_EQ(models.size(), 1u);
    EXPECT_EQ(models[0].path, "/elsewhere/c.gguf");
    EXPECT_EQ(models[0].aliases, (std::vector<std::string>{"c1", "c2"}));
    EXPECT_EQ(models[0].n_ctx, 512);
    EXPECT_EQ(models[0].n_parallel, 3);
    std::ofstream(path) << R"({"custom": {"model": "/c.gguf", "n-gpu-layers": 99}})";
    EXPECT_THROW(apply_models_preset(path.string(), models), cria::Error);
    std::ofstream(path) << R"({"custom": {"model": {"nested": 1}}})";
    EXPECT_THROW(apply_models_preset(path.string(), models), cria::Error);
    std::ofstream(path) << R"({ not json)";
    EXPECT_THROW(apply_models_preset(path.string(), models), cria::Error);
}
