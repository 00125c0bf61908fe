// Metadata values: construction, conversions, typed array views, equality.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cria/core/error.h"
#include "cria/gguf/value.h"

namespace cria::gguf {
namespace {

TEST(GgufValue, IntegerConversionsRespectRange) {
    EXPECT_EQ(Value::u8(200).as_u64(), 200u);
    EXPECT_EQ(Value::i8(-5).as_i64(), -5);
    EXPECT_FALSE(Value::i8(-5).as_u64().has_value());
    EXPECT_FALSE(Value::u64(uint64_t{1} << 63).as_i64().has_value());
    EXPECT_EQ(Value::u64(uint64_t{1} << 63).as_u64(), uint64_t{1} << 63);
    EXPECT_EQ(Value::i64(std::numeric_limits<int64_t>::min()).as_i64(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(Value::i32(7).as_u64(), 7u);
    EXPECT_EQ(Value::u16(65535).as_f64(), 65535.0);
    // Bools and floats are not integers; strings are nothing but strings.
    EXPECT_FALSE(Value::boolean(true).as_u64().has_value());
    EXPECT_FALSE(Value::f32(1.0f).as_u64().has_value());
    EXPECT_FALSE(Value::string("1").as_u64().has_value());
    EXPECT_EQ(Value::boolean(true).as_bool(), true);
    EXPECT_FALSE(Value::u8(1).as_bool().has_value());
    EXPECT_EQ(Value::f32(0.25f).as_f64(), 0.25);
    EXPECT_EQ(*Value::string("héllo").as_string(), "héllo");
    EXPECT_EQ(Value::u8(1).as_string(), nullptr);
}

TEST(GgufValue, TypedArrayViewsMatchOnlyTheirType) {
    const Value ints = Value::array(ValueType::I32, std::vector<int32_t>{1, -2, 3});
    EXPECT_TRUE(ints.is_array());
    EXPECT_EQ(ints.array_type(), ValueType::I32);
    ASSERT_EQ(ints.size(), 3u);
    EXPECT_EQ(ints.as_i32_array()[1], -2);
    EXPECT_TRUE(ints.as_f32_array().empty());
    EXPECT_EQ(ints.as_string_array(), nullptr);
    EXPECT_EQ(ints.at(2).type(), ValueType::I32);
    EXPECT_EQ(ints.at(2).as_i64(), 3);
    EXPECT_THROW(ints.at(3), Error);
    EXPECT_THROW(Value::u8(1).at(0), Error);

    const Value strings = Value::array(ValueType::STRING, std::vector<std::string>{"a", "bc"});
    ASSERT_NE(strings.as_string_array(), nullptr);
    EXPECT_EQ((*strings.as_string_array())[1], "bc");
    EXPECT_EQ(*strings.at(0).as_string(), "a");

    const Value bools = Value::array(ValueType::BOOL, std::vector<uint8_t>{1, 0});
    EXPECT_EQ(bools.at(0).type(), ValueType::BOOL);
    EXPECT_EQ(bools.at(1).as_bool(), false);
    EXPECT_THROW(Value::array(ValueType::BOOL, std::vector<uint8_t>{2}), Error);
    // Storage that does not match the declared element type is refused.
    EXPECT_THROW(Value::array(ValueType::F32, std::vector<int32_t>{1}), Error);
    EXPECT_THROW(Value::array(ValueType::ARRAY, std::vector<Value>{Value::u8(1)}), Error);
}

TEST(GgufValue, NestedArraysShareStorage) {
    const Value inner = Value::array(ValueType::U8, std::vector<uint8_t>{1, 2});
    const Value outer = Value::array(ValueType::ARRAY, std::vector<Value>{inner, inner});
    ASSERT_NE(outer.as_nested_array(), nullptr);
    EXPECT_EQ(outer.at(1), inner);
    EXPECT_EQ(outer.at(1).as_u8_array().data(), inner.as_u8_array().data());
}

TEST(GgufValue, EqualityIsDeepAndBitwiseForFloats) {
    EXPECT_EQ(Value::u32(5), Value::u32(5));
    EXPECT_NE(Value::u32(5), Value::u64(5));  // same number, different type
    EXPECT_NE(Value::string("a"), Value::string("b"));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(Value::f32(nan), Value::f32(nan));
    EXPECT_EQ(Value::array(ValueType::F32, std::vector<float>{nan, 1}),
              Value::array(ValueType::F32, std::vector<float>{nan, 1}));
    EXPECT_NE(Value::array(ValueType::F32, std::vector<float>{0.0f}),
              Value::array(ValueType::F32, std::vector<float>{-0.0f}));
    EXPECT_NE(Value::array(ValueType::I32, std::vector<int32_t>{1}),
              Value::array(ValueType::U32, std::vector<uint32_t>{1}));
}

TEST(GgufValue, DisplayAbbreviatesLongArrays) {
    std::vector<int32_t> many(100);
    for (int i = 0; i < 100; ++i) many[i] = i;
    const std::string shown = Value::array(ValueType::I32, many).to_display_string(3);
    EXPECT_EQ(shown, "[0, 1, 2, ...] (100 i32)");
    EXPECT_EQ(Value::string("a\"b\n").to_display_string(), "\"a\\\"b\\n\"");
    EXPECT_EQ(Value::boolean(false).to_display_string(), "false");
    EXPECT_EQ(Value::i16(-3).to_display_string(), "-3");
    EXPECT_EQ(Value::string("abcdef").to_display_string(8, 3), "\"abc\"... (6 bytes)");
    // "é" is two bytes: a cut inside it backs off to the character boundary.
    EXPECT_EQ(Value::string("a\xc3\xa9z").to_display_string(8, 2), "\"a\"... (4 bytes)");
}

}  // namespace
}  // namespace cria::gguf
