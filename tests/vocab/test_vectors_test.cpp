// llama.cpp's tokenizer test vectors: for every tests/data/tokenizer/<v>.gguf
// with .inp/.out files, our ids must equal the expected ones exactly (no
// special tokens added, none parsed, as test-tokenizer-0 runs them), and for
// lossless vocabs the ids must detokenize back to the input.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace {

using cria::vocab::TokenId;
using cria::vocab::Vocab;
using cria::vocab::VocabType;

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Case {
    std::string text;
    std::vector<TokenId> expected;
};

// .inp: inputs, each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per input.
std::vector<Case> read_cases(const std::filesystem::path& vocab) {
    const std::string inp = read_file(vocab.string() + ".inp");
    const std::string out = read_file(vocab.string() + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0;;) {
        const size_t hit = inp.find(sep, pos);
        if (hit == std::string::npos) break;
        inputs.push_back(inp.substr(pos, hit - pos));
        pos = hit + sep.size();
    }
    std::vector<Case> cases;
    std::istringstream lines(out);
    std::string line;
    for (const std::string& text : inputs) {
        if (!std::getline(lines, line)) break;
        Case c{text, {}};
        std::istringstream ids(line);
        TokenId id;
        while (ids >> id) c.expected.push_back(id);
        cases.push_back(std::move(c));
    }
    return cases;
}

std::vector<std::string> vocab_files() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(cria::test::data_path("tokenizer"))) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".gguf") && std::filesystem::exists(entry.path().string() + ".inp")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

class TestVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(TestVectors, IdsMatchLlamaCpp) {
    const auto path = cria::test::data_path("tokenizer/" + GetParam());
    const Vocab vocab = Vocab::load(path.string());
    const std::vector<Case> cases = read_cases(path);
    ASSERT_GT(cases.size(), 10u);
    size_t passed = 0;
    for (const Case& c : cases) {
        const std::vector<TokenId> ids = vocab.tokenize(c.text, false, false);
        EXPECT_EQ(ids, c.expected) << "input: '" << c.text << "'";
        passed += ids == c.expected;
    }
    std::printf("[ vectors  ] %s: %zu/%zu identical\n", GetParam().c_str(), passed, cases.size());
}

TEST_P(TestVectors, LosslessVocabsRoundTrip) {
    const auto path = cria::test::data_path("tokenizer/" + GetParam());
    const Vocab vocab = Vocab::load(path.string());
    if (vocab.type() == VocabType::Wpm) GTEST_SKIP() << "WordPiece lowercases and drops spaces: not lossless";
    cria::vocab::DetokenizeOptions raw;
    raw.clean_spaces = 0;
    for (const Case& c : read_cases(path)) {
        EXPECT_EQ(vocab.detokenize(c.expected, raw), c.text);
    }
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, TestVectors, ::testing::ValuesIn(vocab_files()),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n;
                         });

}  // namespace
