// The safetensors reader on valid and hostile files: every bad header gives a
// clear cria::Error, never a crash or a huge allocation.

#include <gtest/gtest.h>

#include <cstring>

#include "cria/convert/safetensors.h"
#include "cria/core/error.h"
#include "cria/core/float16.h"

namespace cria::convert {
namespace {

std::vector<uint8_t> image(const std::string& header, size_t data_bytes, uint64_t claimed = UINT64_MAX) {
    const uint64_t n = claimed == UINT64_MAX ? header.size() : claimed;
    std::vector<uint8_t> out(8 + header.size() + data_bytes);
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
    std::memcpy(out.data() + 8, header.data(), header.size());
    for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
    return out;
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& part) {
    try {
        SafetensorsFile::parse(bytes, "test.safetensors");
        FAIL() << "no error, expected one mentioning '" << part << "'";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test.safetensors"), std::string::npos) << e.what();
    }
}

TEST(Safetensors, ParsesTensorsAndMetadata) {
    const auto bytes = image(
        R"({"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
        R"("__metadata__":{"format":"pt"}})",
        12);
    auto f = SafetensorsFile::parse(bytes, "test.safetensors");
    ASSERT_EQ(f->tensors().size(), 2u);
    EXPECT_EQ(f->tensors()[0].name, "a");  // data order
    EXPECT_EQ(f->find("b")->shape, std::vector<uint64_t>{2});
    EXPECT_EQ(f->metadata().at("format"), "pt");
    EXPECT_EQ(f->data(*f->find("b")).size(), 4u);
    const auto a = f->to_f32(*f->find("a"));
    float want0;
    const uint8_t raw[4] = {0, 1, 2, 3};
    std::memcpy(&want0, raw, 4);
    EXPECT_EQ(std::memcmp(&a[0], &want0, 4), 0);
    const auto b = f->to_f32(*f->find("b"));
    EXPECT_EQ(b[0], f16_to_f32(static_cast<uint16_t>(8 | (9 << 8))));
}

TEST(Safetensors, EmptyTensorAndEmptyHeader) {
    auto f = SafetensorsFile::parse(image(R"({"z":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]}})", 0), "x");
    EXPECT_EQ(f->find("z")->n_elements(), 0u);
    EXPECT_TRUE(SafetensorsFile::parse(image("{}", 0), "x")->tensors().empty());
}

TEST(Safetensors, HostileHeaders) {
    expect_error({1, 2, 3}, "too short");
    expect_error(image("{}", 0, 1ull << 40), "exceeds");
    expect_error(image("{}", 0, 50), "past the end");
    expect_error(image("{\"a\":", 0), "not valid JSON");
    expect_error(image("[1,2]", 0), "not a JSON object");
    expect_error(image("{\"a\":\"\xff\xfe\"}", 0), "not valid JSON");  // invalid UTF-8
    expect_error(image(R"({"a":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})", 4), "unknown dtype");
    expect_error(image(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), "missing dtype");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), "non-negative");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4), "overflows");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8), "needs 8");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 8), "outside");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 8), "outside");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 8), "two non-negative");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                 "overlap");
    expect_error(image(R"({"a":[1]})", 0), "not an object");
    expect_error(image(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4), "empty name");
    expect_error(image(R"({"__metadata__":{"k":1}})", 0), "not a string");
    expect_error(image(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4), "at most 8");
}

TEST(Safetensors, IntegerTensorsAreNotFloats) {
    auto f = SafetensorsFile::parse(image(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8), "x");
    EXPECT_THROW(f->to_f32(*f->find("i")), Error);
}

TEST(Safetensors, OpenMissingFile) { EXPECT_THROW(SafetensorsFile::open("/nonexistent/x.safetensors"), Error); }

}  // namespace
}  // namespace cria::convert
