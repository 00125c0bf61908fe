// Read -> write -> read: every bundled GGUF file (llama.cpp's and the Python
// gguf package's output) must come back byte-identical, and what the writer
// produces from scratch must read back with the same metadata and bytes.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "support/test_paths.h"

namespace cria::gguf {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> bundled_gguf_files() {
    std::vector<fs::path> out;
    for (const fs::path& root : {test::source_dir() / "models", test::source_dir() / "tests" / "data"}) {
        for (const auto& entry : fs::recursive_directory_iterator(root)) {
            if (entry.is_regular_file() && entry.path().extension() == ".gguf" &&
                entry.path().string().find("regressions") == std::string::npos) {
                out.push_back(entry.path());
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<char> slurp(const fs::path& p) {
    // One bulk read: byte-by-byte iteration is slow under the sanitizers.
    std::ifstream in(p, std::ios::binary | std::ios::ate);
    std::vector<char> out(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return out;
}

TEST(GgufRoundTrip, EveryBundledFileIsRewrittenByteIdentical) {
    const auto files = bundled_gguf_files();
    // stories260K, four austen models and twelve tokenizer vocabularies at least.
    ASSERT_GE(files.size(), 17u);
    const fs::path out = test::temp_dir() / "roundtrip.gguf";
    for (const fs::path& path : files) {
        SCOPED_TRACE(path.string());
        auto original = File::open(path.string());
        write_copy(*original, out.string());
        const auto a = slurp(path), b = slurp(out);
        ASSERT_EQ(a.size(), b.size());
        // Find the first differing byte for a useful failure message.
        const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin());
        ASSERT_TRUE(mismatch.first == a.end()) << "first difference at byte " << (mismatch.first - a.begin());

        auto again = File::open(out.string());
        EXPECT_EQ(again->metadata(), original->metadata());
        ASSERT_EQ(again->tensors().size(), original->tensors().size());
        for (size_t i = 0; i < again->tensors().size(); ++i) {
            const TensorInfo& x = original->tensors()[i];
            const TensorInfo& y = again->tensors()[i];
            EXPECT_EQ(x.name, y.name);
            EXPECT_EQ(x.type, y.type);
            EXPECT_EQ(x.ne, y.ne);
            EXPECT_EQ(x.offset, y.offset);
        }
    }
}

TEST(GgufWriter, EveryValueTypeAndTensorTypeReadsBack) {
    Writer w;
    w.add_metadata("general.architecture", Value::string("llama"));
    w.add_metadata("general.alignment", Value::u32(64));
    w.add_metadata("t.u8", Value::u8(250));
    w.add_metadata("t.i8", Value::i8(-100));
    w.add_metadata("t.u16", Value::u16(60000));
    w.add_metadata("t.i16", Value::i16(-30000));
    w.add_metadata("t.u32", Value::u32(4000000000u));
    w.add_metadata("t.i32", Value::i32(-2000000000));
    w.add_metadata("t.f32", Value::f32(3.5f));
    w.add_metadata("t.bool", Value::boolean(true));
    w.add_metadata("t.string", Value::string("ünïcode \xF0\x9F\x98\x80"));
    w.add_metadata("t.u64", Value::u64(~uint64_t{0}));
    w.add_metadata("t.i64", Value::i64(-(int64_t{1} << 62)));
    w.add_metadata("t.f64", Value::f64(-0.125));
    w.add_metadata("t.arr.f32", Value::array(ValueType::F32, std::vector<float>{1.5f, -2.0f}));
    w.add_metadata("t.arr.str", Value::array(ValueType::STRING, std::vector<std::string>{"x", "", "yz"}));
    w.add_metadata("t.arr.bool", Value::array(ValueType::BOOL, std::vector<uint8_t>{0, 1, 1}));
    w.add_metadata("t.arr.i64", Value::array(ValueType::I64, std::vector<int64_t>{-1, 1}));
    w.add_metadata("t.arr.empty", Value::array(ValueType::U16, std::vector<uint16_t>{}));
    w.add_metadata("t.arr.nested",
                   Value::array(ValueType::ARRAY,
                                std::vector<Value>{Value::array(ValueType::I8, std::vector<int8_t>{-1, 2}),
                                                   Value::array(ValueType::STRING, std::vector<std::string>{"n"})}));

    // Deterministic tensor bytes of awkward sizes and several types.
    struct Spec {
        std::string name;
        ElementType type;
        std::vector<uint64_t> shape;
    };
    const std::vector<Spec> specs = {{"a.f32", ElementType::F32, {3, 5}},
                                     {"b.f16", ElementType::F16, {7}},
                                     {"c.q4_0", ElementType::Q4_0, {64, 3}},
                                     {"d.q4_K", ElementType::Q4_K, {256, 1, 2}},
                                     {"e.i8", ElementType::I8, {1, 2, 3, 4}}};
    std::vector<std::vector<uint8_t>> payloads;
    uint32_t seed = 12345;
    for (const Spec& s : specs) {
        uint64_t rows = 1;
        for (size_t d = 1; d < s.shape.size(); ++d) rows *= s.shape[d];
        std::vector<uint8_t> bytes(*row_size_bytes(s.type, s.shape[0]) * rows);
        for (uint8_t& x : bytes) x = static_cast<uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
        payloads.push_back(std::move(bytes));
    }
    int asked = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
        w.add_tensor(specs[i].name, specs[i].type, specs[i].shape, [&, i] {
            ++asked;
            return std::span<const uint8_t>(payloads[i]);
        });
    }
    EXPECT_EQ(w.alignment(), 64u);
    const fs::path out = test::temp_dir() / "all_types.gguf";
    w.write(out.string());
    EXPECT_EQ(asked, 5);  // each tensor's bytes were asked for exactly once

    auto f = File::open(out.string());
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->metadata(), w.metadata());
    EXPECT_EQ(*f->find("t.arr.nested")->at(1).at(0).as_string(), "n");
    EXPECT_EQ(f->find("t.arr.nested")->at(0).as_i8_array()[0], -1);
    ASSERT_EQ(f->tensors().size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
        const TensorInfo& t = f->tensors()[i];
        EXPECT_EQ(t.name, specs[i].name);
        EXPECT_EQ(t.type, specs[i].type);
        EXPECT_EQ(t.n_dims, specs[i].shape.size());
        EXPECT_EQ(t.offset % 64, 0u);
        const auto data = f->tensor_data(t);
        ASSERT_EQ(data.size(), payloads[i].size());
        EXPECT_EQ(std::memcmp(data.data(), payloads[i].data(), data.size()), 0) << t.name;
    }
}

TEST(GgufWriter, RejectsWhatLlamaCppCouldNotRead) {
    Writer w;
    const auto none = [] { return std::span<const uint8_t>(); };
    const std::vector<uint64_t> shape{32};
    w.add_metadata("k", Value::u8(1));
    EXPECT_THROW(w.add_metadata("k", Value::u8(2)), Error);
    EXPECT_THROW(w.add_metadata("", Value::u8(2)), Error);
    EXPECT_THROW(w.add_metadata("bad\xff", Value::u8(2)), Error);
    EXPECT_THROW(w.add_metadata("general.alignment", Value::u32(48)), Error);
    EXPECT_THROW(w.add_metadata("general.alignment", Value::string("32")), Error);
    w.add_tensor("t", ElementType::F32, shape, none);
    EXPECT_THROW(w.add_tensor("t", ElementType::F32, shape, none), Error);               // duplicate
    EXPECT_THROW(w.add_tensor(std::string(64, 'x'), ElementType::F32, shape, none), Error);  // name too long
    EXPECT_THROW(w.add_tensor("q", ElementType::Q4_0, std::vector<uint64_t>{33}, none), Error);  // partial block
    EXPECT_THROW(w.add_tensor("z", ElementType::F32, std::vector<uint64_t>{0}, none), Error);
    EXPECT_THROW(w.add_tensor("five", ElementType::F32, std::vector<uint64_t>{1, 1, 1, 1, 1}, none), Error);
    EXPECT_THROW(w.add_tensor("big", ElementType::F32, std::vector<uint64_t>{uint64_t{1} << 40, uint64_t{1} << 30}, none),
                 Error);
}

TEST(GgufWriter, WrongSizedTensorSourceFailsAndLeavesNoFile) {
    Writer w;
    std::vector<uint8_t> too_short(10);
    w.add_tensor("t", ElementType::F32, std::vector<uint64_t>{4}, [&] { return std::span<const uint8_t>(too_short); });
    const fs::path out = test::temp_dir() / "short.gguf";
    try {
        w.write(out.string());
        FAIL() << "expected cria::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'t'"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
}

TEST(GgufWriter, LaterAlignmentMovesEarlierTensors) {
    Writer w;
    w.add_tensor("a", ElementType::F32, std::vector<uint64_t>{3}, [] { return std::span<const uint8_t>(); });
    w.add_tensor("b", ElementType::F32, std::vector<uint64_t>{3}, [] { return std::span<const uint8_t>(); });
    EXPECT_EQ(w.tensors()[1].offset, 32u);
    w.add_metadata("general.alignment", Value::u32(128));
    EXPECT_EQ(w.tensors()[1].offset, 128u);
}

}  // namespace
}  // namespace cria::gguf
