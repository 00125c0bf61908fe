// Reading both importance-matrix formats, and clear errors for broken files.

#include <gtest/gtest.h>

#include <fstream>

#include "cria/core/error.h"
#include "cria/gguf/gguf.h"
#include "cria/quantizer/imatrix.h"
#include "support/test_paths.h"

namespace cria::quantizer {
namespace {

std::string temp(const std::string& name) { return (test::temp_dir() / name).string(); }

std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
    const std::string path = temp(name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

void expect_error(const std::string& path, const std::string& part) {
    try {
        load_imatrix(path);
        FAIL() << "no error for " << path;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(Imatrix, LegacyRoundTripDividesByCalls) {
    const std::string path = temp("a.dat");
    save_legacy_imatrix(path, {{"blk.0.ffn_up.weight", {2, 4, 6}}, {"blk.0.attn_q.weight", {10, 0}}}, 2, "wiki.txt", 7);
    const ImportanceMatrix m = load_imatrix(path);
    EXPECT_TRUE(m.legacy);
    ASSERT_EQ(m.values.size(), 2u);
    EXPECT_EQ(m.values.at("blk.0.ffn_up.weight"), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(m.values.at("blk.0.attn_q.weight"), (std::vector<float>{5, 0}));
    EXPECT_EQ(m.chunk_count, 7);
    ASSERT_EQ(m.datasets.size(), 1u);
    EXPECT_EQ(m.datasets[0], "wiki.txt");
}

TEST(Imatrix, LegacyMalformed) {
    const std::string good = temp("good.dat");
    save_legacy_imatrix(good, {{"w", {1, 2, 3, 4}}}, 1, "d", 1);
    std::ifstream in(good, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Cut inside the values.
    expect_error(write_bytes("cut.dat", {bytes.begin(), bytes.begin() + 20}), "ends inside");
    expect_error(write_bytes("empty.dat", {}), "ends inside");
    // Zero entries.
    expect_error(write_bytes("zero.dat", {0, 0, 0, 0}), "not positive");
    // Absurd name length.
    std::vector<char> bad = bytes;
    bad[4] = '\xff'; bad[5] = '\xff'; bad[6] = '\xff'; bad[7] = '\x7f';
    expect_error(write_bytes("name.dat", bad), "name length");
    // Value count larger than the file.
    bad = bytes;
    const size_t nval_at = 4 + 4 + 1 + 4;
    bad[nval_at + 3] = '\x10';
    expect_error(write_bytes("nval.dat", bad), "ends inside");
    // Non-finite values.
    const std::string inf = temp("inf.dat");
    save_legacy_imatrix(inf, {{"w", {1, std::numeric_limits<float>::infinity()}}}, 1, "d", 1);
    expect_error(inf, "non-finite");
    expect_error(temp("missing.dat"), "cannot open");
}

std::string gguf_imatrix(const std::string& name, bool with_counts, uint64_t n_counts) {
    static std::vector<float> sums = {2, 4, 6, 8, 1, 1, 1, 1};
    static std::vector<float> counts = {2, 0};
    gguf::Writer w;
    w.add_metadata("general.type", gguf::Value::string("imatrix"));
    w.add_metadata("imatrix.chunk_count", gguf::Value::u32(5));
    w.add_metadata("imatrix.datasets", gguf::Value::array(gguf::ValueType::STRING, std::vector<std::string>{"set.txt"}));
    const uint64_t s_shape[] = {4, 2};
    w.add_tensor("blk.0.ffn_down.weight.in_sum2", ElementType::F32, s_shape, [] {
        return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(sums.data()), sums.size() * 4);
    });
    if (with_counts) {
        const uint64_t c_shape[] = {1, n_counts};
        w.add_tensor("blk.0.ffn_down.weight.counts", ElementType::F32, c_shape, [n_counts] {
            return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(counts.data()), n_counts * 4);
        });
    }
    const std::string path = temp(name);
    w.write(path);
    return path;
}

TEST(Imatrix, GgufFormat) {
    const ImportanceMatrix m = load_imatrix(gguf_imatrix("a.gguf", true, 2));
    EXPECT_FALSE(m.legacy);
    // Matrix 0 seen twice: sums / 2; matrix 1 never seen: 1.0 as llama-quantize uses.
    EXPECT_EQ(m.values.at("blk.0.ffn_down.weight"), (std::vector<float>{1, 2, 3, 4, 1, 1, 1, 1}));
    EXPECT_EQ(m.chunk_count, 5);
    EXPECT_EQ(m.datasets, std::vector<std::string>{"set.txt"});
}

TEST(Imatrix, GgufMalformed) {
    expect_error(gguf_imatrix("nocounts.gguf", false, 0), "no matching");
    expect_error(gguf_imatrix("badcounts.gguf", true, 1), "sums for");
    // A GGUF model is not an imatrix.
    expect_error(test::model_path("stories260K/stories260K.gguf").string(), "in_sum2");
    // A truncated GGUF gives the reader's error.
    const std::string path = gguf_imatrix("full.gguf", true, 2);
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes.resize(bytes.size() / 2);
    EXPECT_THROW(load_imatrix(write_bytes("half.gguf", bytes)), Error);
}

}  // namespace
}  // namespace cria::quantizer
