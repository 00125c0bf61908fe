// Fuzzer findings and the fuzzer's seed corpus, replayed on every test run:
// each input must parse (and round-trip through the writer) or be rejected
// with one cria::Error. Under the ASan/UBSan build this also proves that no
// input reads out of bounds.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "support/test_paths.h"

namespace cria::gguf {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_in(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<uint8_t> slurp(const fs::path& p) {
    // One bulk read: byte-by-byte iteration is slow under the sanitizers.
    std::ifstream in(p, std::ios::binary | std::ios::ate);
    std::vector<uint8_t> out(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return out;
}

// Returns true when `path` parsed; checks that every way of reading it agrees.
bool replay(const fs::path& path) {
    const std::vector<uint8_t> bytes = slurp(path);
    std::unique_ptr<File> in_memory;
    std::string memory_error;
    try {
        in_memory = File::parse(bytes, path.string());
    } catch (const Error& e) {
        memory_error = e.what();
    }
    for (LoadMode mode : {LoadMode::Mmap, LoadMode::None}) {
        SCOPED_TRACE(std::string(load_mode_name(mode)));
        try {
            auto opened = File::open(path.string(), mode);
            EXPECT_TRUE(in_memory) << "File::open accepted what File::parse rejected: " << memory_error;
            if (in_memory) {
                EXPECT_EQ(opened->metadata(), in_memory->metadata());
            }
        } catch (const Error& e) {
            EXPECT_FALSE(in_memory) << "File::open rejected what File::parse accepted: " << e.what();
            EXPECT_EQ(std::string(e.what()), memory_error);
        }
    }
    if (in_memory) {
        // What the reader accepts, the writer must write and the reader read back.
        const fs::path copy = test::temp_dir() / "replay.gguf";
        write_copy(*in_memory, copy.string());
        EXPECT_EQ(File::open(copy.string())->metadata(), in_memory->metadata());
    } else {
        EXPECT_NE(memory_error.find(path.string()), std::string::npos) << memory_error;
    }
    return in_memory != nullptr;
}

TEST(GgufRegressions, FuzzerFindingsParseOrFailCleanly) {
    const auto inputs = inputs_in(test::data_path("gguf/regressions"));
    ASSERT_FALSE(inputs.empty());
    for (const fs::path& p : inputs) {
        SCOPED_TRACE(p.filename().string());
        // By the directory's convention, only files named "*valid*" are well-formed.
        const bool valid = p.filename().string().find("valid") != std::string::npos &&
                           p.filename().string().find("not_valid") == std::string::npos;
        EXPECT_EQ(replay(p), valid);
    }
}

TEST(GgufRegressions, SeedCorpusValidFilesParseAndTruncationsFail) {
    const auto inputs = inputs_in(test::source_dir() / "fuzz" / "corpus" / "gguf");
    ASSERT_GE(inputs.size(), 10u);
    for (const fs::path& p : inputs) {
        SCOPED_TRACE(p.filename().string());
        const bool truncated = p.filename().string().find("_cut") != std::string::npos;
        EXPECT_EQ(replay(p), !truncated);
    }
}

}  // namespace
}  // namespace cria::gguf
