// Hostile and broken files: each must give one cria::Error that names the
// file and the field at fault — never a crash, never a huge allocation.

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/writer.h"
#include "gguf/gguf_bytes.h"
#include "support/test_paths.h"

namespace cria::gguf {
namespace {

using test::GgufBytes;

constexpr uint64_t kHuge = uint64_t{1} << 60;

// Parses `b` as "bad.gguf" and returns the error message ("" when it parsed).
std::string parse_error(const GgufBytes& b) {
    try {
        File::parse(b.span(), "bad.gguf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// Expects a cria::Error whose message names the file and contains every one of `parts`.
#define EXPECT_BAD(bytes, ...)                                                              \
    do {                                                                                    \
        const std::string msg = parse_error(bytes);                                         \
        ASSERT_FALSE(msg.empty()) << "parsed without error";                                \
        EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;                          \
        for (const char* part : {__VA_ARGS__}) EXPECT_NE(msg.find(part), std::string::npos) \
            << "'" << part << "' missing from: " << msg;                                    \
    } while (0)

// A small valid file: one key and one f32 tensor [2].
GgufBytes valid_one_tensor() {
    GgufBytes b;
    b.header(1, 1).kv_str("general.architecture", "llama").tensor("w", {2}, 0, 0).pad();
    b.put<float>(1).put<float>(2);
    return b;
}

TEST(GgufMalformed, TheBaselineFilesAreValid) {
    EXPECT_EQ(parse_error(valid_one_tensor()), "");
    GgufBytes empty;
    empty.header(0, 0);
    EXPECT_EQ(parse_error(empty), "");
}

TEST(GgufMalformed, HeaderProblems) {
    GgufBytes tiny;
    tiny.raw("GG");
    EXPECT_BAD(tiny, "too small");
    GgufBytes ggml;
    ggml.raw("GGJT").u32(3).u64(0).u64(0);
    EXPECT_BAD(ggml, "magic", "not a GGUF file");
    GgufBytes big_endian;
    big_endian.u32(0x47475546).u32(0x03000000).u64(0).u64(0);
    EXPECT_BAD(big_endian, "big-endian");
    GgufBytes v1;
    v1.header(0, 0, 1);
    EXPECT_BAD(v1, "version", "version 1");
    GgufBytes v4;
    v4.header(0, 0, 4);
    EXPECT_BAD(v4, "version", "4");
}

TEST(GgufMalformed, TruncatedAtEveryByteOfASmallFile) {
    // A file with every section: header, metadata of several types, arrays,
    // two tensors, padding and data. Any cut before the last tensor's last
    // byte must fail cleanly; cuts inside the final padding still parse.
    Writer w;
    w.add_metadata("general.architecture", Value::string("llama"));
    w.add_metadata("k.u32", Value::u32(7));
    w.add_metadata("k.arr", Value::array(ValueType::STRING, std::vector<std::string>{"ab", "c"}));
    w.add_metadata("k.f32s", Value::array(ValueType::F32, std::vector<float>{1, 2, 3}));
    w.add_metadata("k.nested", Value::array(ValueType::ARRAY, std::vector<Value>{Value::array(
                                                                ValueType::U16, std::vector<uint16_t>{1})}));
    std::vector<uint8_t> a(12, 0x11), b(34, 0x22);
    w.add_tensor("a", ElementType::F32, std::vector<uint64_t>{3}, [&] { return std::span<const uint8_t>(a); });
    w.add_tensor("b", ElementType::Q8_0, std::vector<uint64_t>{32}, [&] { return std::span<const uint8_t>(b); });
    const auto path = test::temp_dir() / "cut.gguf";
    w.write(path.string());
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> whole{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};

    auto full = File::parse(whole, "bad.gguf");
    const TensorInfo& last = full->tensors().back();
    const uint64_t needed = full->data_offset() + last.offset + last.n_bytes;
    ASSERT_LT(needed, whole.size());  // the final padding exists, so both branches are tested

    for (size_t cut = 0; cut < whole.size(); ++cut) {
        SCOPED_TRACE("cut at " + std::to_string(cut));
        GgufBytes prefix;
        prefix.bytes.assign(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
        const std::string msg = parse_error(prefix);
        if (cut < needed) {
            ASSERT_FALSE(msg.empty());
            EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
            const bool says_why = msg.find("truncated") != std::string::npos ||
                                  msg.find("too small") != std::string::npos ||
                                  msg.find("past the end") != std::string::npos ||
                                  msg.find("left in the file") != std::string::npos;
            EXPECT_TRUE(says_why) << msg;
        } else {
            EXPECT_EQ(msg, "");
        }
    }
}

TEST(GgufMalformed, TruncatedFilesFailInEveryLoadMode) {
    const GgufBytes good = valid_one_tensor();
    const auto path = test::temp_dir() / "bad.gguf";
    for (size_t cut : {size_t{3}, size_t{20}, size_t{30}, good.bytes.size() - 1}) {
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(good.bytes.data()), static_cast<std::streamsize>(cut));
        for (LoadMode m : {LoadMode::Auto, LoadMode::None, LoadMode::Mmap, LoadMode::Dio}) {
            SCOPED_TRACE(std::to_string(cut) + " " + std::string(load_mode_name(m)));
            try {
                File::open(path.string(), m);
                ADD_FAILURE() << "opened a truncated file";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("bad.gguf"), std::string::npos) << e.what();
            }
        }
    }
}

TEST(GgufMalformed, CountsThatCannotFitAreRejectedBeforeAllocating) {
    GgufBytes kv;
    kv.header(0, kHuge);
    EXPECT_BAD(kv, "metadata count", "cannot fit");
    GgufBytes tensors;
    tensors.header(kHuge, 0);
    EXPECT_BAD(tensors, "tensor count", "cannot fit");
    for (uint32_t et : {0u, 4u, 8u, 9u, 12u}) {  // u8, u32, string, array, f64 elements
        GgufBytes arr;
        arr.header(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(et).u64(kHuge);
        EXPECT_BAD(arr, "tokenizer.ggml.tokens", "array of", "cannot fit");
    }
    GgufBytes max;
    max.header(0, 1).str("k").u32(9).u32(0).u64(std::numeric_limits<uint64_t>::max());
    EXPECT_BAD(max, "'k'", "cannot fit");
}

TEST(GgufMalformed, StringLengthsPastTheEnd) {
    GgufBytes key;
    key.header(0, 1).u64(kHuge).raw("abc").zeros(64);
    EXPECT_BAD(key, "metadata #0 key", "string length");
    GgufBytes value;
    value.header(0, 1).str("k").u32(8).u64(std::numeric_limits<uint64_t>::max()).raw("x");
    EXPECT_BAD(value, "'k'", "string length");
    GgufBytes name;
    name.header(1, 0).u64(100).raw("short").zeros(40);
    EXPECT_BAD(name, "tensor #0 name", "string length");
    GgufBytes element;
    element.header(0, 1).str("list").u32(9).u32(8).u64(2).str("a").u64(1000);
    EXPECT_BAD(element, "'list'[1]", "string length");
}

TEST(GgufMalformed, UnknownTypesAndBadValues) {
    GgufBytes type;
    type.header(0, 1).str("k").u32(13).u32(0);
    EXPECT_BAD(type, "'k'", "unknown value type 13");
    GgufBytes elem;
    elem.header(0, 1).str("k").u32(9).u32(99).u64(1);
    EXPECT_BAD(elem, "'k'", "unknown array element type 99");
    GgufBytes boolean;
    boolean.header(0, 1).str("flag").u32(7).put<uint8_t>(2);
    EXPECT_BAD(boolean, "'flag'", "neither 0 nor 1");
    GgufBytes bools;
    bools.header(0, 1).str("flags").u32(9).u32(7).u64(3).put<uint8_t>(1).put<uint8_t>(0).put<uint8_t>(5);
    EXPECT_BAD(bools, "'flags'[2]", "neither 0 nor 1");
}

TEST(GgufMalformed, NestingDepthIsBounded) {
    // Arrays nested 9 deep, with a room for the innermost empty array.
    GgufBytes deep;
    deep.header(0, 1).str("deep").u32(9);
    for (int i = 0; i < 9; ++i) deep.u32(9).u64(1);
    deep.u32(0).u64(0);
    EXPECT_BAD(deep, "'deep'", "nested deeper than 8");
    // Eight levels are fine.
    GgufBytes ok;
    ok.header(0, 1).str("ok").u32(9);
    for (int i = 0; i < 7; ++i) ok.u32(9).u64(1);
    ok.u32(0).u64(0);
    EXPECT_EQ(parse_error(ok), "");
}

TEST(GgufMalformed, KeysMustBeUniqueNonEmptyUtf8) {
    GgufBytes dup;
    dup.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
    EXPECT_BAD(dup, "'a.b'", "duplicate key");
    GgufBytes empty;
    empty.header(0, 1).kv_u32("", 1);
    EXPECT_BAD(empty, "metadata #0 key", "empty key");
    for (const std::string& bad : {std::string("k\xff"), std::string("\xc0\xaf"), std::string("\xed\xa0\x80"),
                                   std::string("a\xe2\x82"), std::string("nul\0x", 5)}) {
        GgufBytes b;
        b.header(0, 1).kv_u32(bad, 1);
        EXPECT_BAD(b, "metadata #0 key", "not valid UTF-8");
    }
    GgufBytes fine;
    fine.header(0, 1).kv_u32("ключ.😀", 1);
    EXPECT_EQ(parse_error(fine), "");
}

TEST(GgufMalformed, AlignmentMustBeAPowerOfTwo) {
    for (uint32_t a : {0u, 3u, 48u}) {
        GgufBytes b;
        b.header(0, 1).kv_u32("general.alignment", a);
        EXPECT_BAD(b, "general.alignment", "power of two");
    }
    GgufBytes str;
    str.header(0, 1).kv_str("general.alignment", "32");
    EXPECT_BAD(str, "general.alignment", "string");
}

TEST(GgufMalformed, TensorNamesAndShapes) {
    GgufBytes dup;
    dup.header(2, 0).tensor("w", {1}, 0, 0).tensor("w", {1}, 0, 32).pad().zeros(64);
    EXPECT_BAD(dup, "'w'", "duplicate tensor name");
    GgufBytes utf8;
    utf8.header(1, 0).tensor("w\xfe", {1}, 0, 0).pad().zeros(32);
    EXPECT_BAD(utf8, "tensor #0 name", "not valid UTF-8");
    GgufBytes empty;
    empty.header(1, 0).tensor("", {1}, 0, 0).pad().zeros(32);
    EXPECT_BAD(empty, "tensor #0 name", "empty tensor name");
    GgufBytes longname;
    longname.header(1, 0).tensor(std::string(64, 'n'), {1}, 0, 0).pad().zeros(32);
    EXPECT_BAD(longname, "tensor #0 name", "limit is 63");
    GgufBytes zero_dims;
    zero_dims.header(1, 0).tensor("w", {}, 0, 0).pad().zeros(32);
    EXPECT_BAD(zero_dims, "'w' n_dims", "0 dimensions");
    GgufBytes five_dims;
    five_dims.header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(32);
    EXPECT_BAD(five_dims, "'w' n_dims", "5 dimensions");
    GgufBytes zero;
    zero.header(1, 0).tensor("w", {4, 0}, 0, 0).pad().zeros(32);
    EXPECT_BAD(zero, "'w' ne[1]", "zero");
    GgufBytes negative;
    negative.header(1, 0).tensor("w", {uint64_t{1} << 63}, 0, 0).pad().zeros(32);
    EXPECT_BAD(negative, "'w' ne[0]", "negative");
    GgufBytes overflow;
    overflow.header(1, 0).tensor("w", {uint64_t{1} << 32, uint64_t{1} << 32, 2}, 0, 0).pad().zeros(32);
    EXPECT_BAD(overflow, "'w' shape", "overflows");
    GgufBytes bytes_overflow;  // elements fit in int64, bytes (x4) do not
    bytes_overflow.header(1, 0).tensor("w", {uint64_t{1} << 31, uint64_t{1} << 31}, 0, 0).pad().zeros(32);
    EXPECT_BAD(bytes_overflow, "'w' shape", "overflows");
    GgufBytes row_overflow;  // one row of 2^62 f64 values is 2^65 bytes
    row_overflow.header(1, 0).tensor("w", {uint64_t{1} << 62}, 28, 0).pad().zeros(32);
    EXPECT_BAD(row_overflow, "'w' shape", "overflows");
    for (uint32_t type : {4u, 31u, 40u, 0xffffffffu}) {
        GgufBytes b;
        b.header(1, 0).tensor("w", {32}, type, 0).pad().zeros(64);
        EXPECT_BAD(b, "'w' type", "unknown element type id");
    }
    GgufBytes partial_block;
    partial_block.header(1, 0).tensor("w", {33}, 2, 0).pad().zeros(64);  // q4_0 blocks are 32 values
    EXPECT_BAD(partial_block, "'w' ne[0]", "not a multiple", "q4_0", "32");
}

TEST(GgufMalformed, TensorDataMustBeAlignedInsideAndDisjoint) {
    GgufBytes misaligned;
    misaligned.header(1, 0).tensor("w", {2}, 0, 4).pad().zeros(64);
    EXPECT_BAD(misaligned, "'w' offset", "not a multiple of the alignment 32");
    GgufBytes past;
    past.header(1, 0).tensor("w", {2}, 0, 1u << 20).pad().zeros(32);
    EXPECT_BAD(past, "'w' data", "past the end");
    GgufBytes too_long;
    too_long.header(1, 0).tensor("w", {100}, 0, 0).pad().zeros(32);
    EXPECT_BAD(too_long, "'w' data", "past the end");
    GgufBytes huge_offset;
    huge_offset.header(1, 0).tensor("w", {8}, 0, std::numeric_limits<uint64_t>::max() - 31).pad().zeros(32);
    EXPECT_BAD(huge_offset, "'w' data", "past the end");
    GgufBytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);
    EXPECT_BAD(overlap, "'b' offset", "overlaps tensor 'a'");
    GgufBytes no_data;  // the file ends right after the tensor table
    no_data.header(1, 0).tensor("w", {1}, 0, 0);
    EXPECT_BAD(no_data, "data section", "past the end");
}

TEST(GgufMalformed, MessagesGiveTheByteOffset) {
    GgufBytes b;
    b.header(0, 2).kv_u32("a", 1).str("b").u32(13);
    // "a" takes 8 + 1 + 4 + 4 = 17 bytes after the 24-byte header; "b"'s type ends at 24 + 17 + 9 + 4.
    EXPECT_BAD(b, "(at byte 54)");
}

}  // namespace
}  // namespace cria::gguf
