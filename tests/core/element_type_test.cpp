#include "cria/core/element_type.h"

#include <gtest/gtest.h>

namespace cria {
namespace {

// Block sizes and byte sizes from ggml's block structs; a wrong entry here
// would make every file of that type unreadable.
TEST(ElementType, GeometryMatchesGgml) {
    struct Expect { ElementType t; uint32_t block, bytes; };
    const Expect expected[] = {
        {ElementType::F32, 1, 4},      {ElementType::F16, 1, 2},      {ElementType::BF16, 1, 2},
        {ElementType::Q4_0, 32, 18},   {ElementType::Q4_1, 32, 20},   {ElementType::Q5_0, 32, 22},
        {ElementType::Q5_1, 32, 24},   {ElementType::Q8_0, 32, 34},   {ElementType::Q8_1, 32, 36},
        {ElementType::Q2_K, 256, 84},  {ElementType::Q3_K, 256, 110}, {ElementType::Q4_K, 256, 144},
        {ElementType::Q5_K, 256, 176}, {ElementType::Q6_K, 256, 210}, {ElementType::Q8_K, 256, 292},
        {ElementType::IQ2_XXS, 256, 66}, {ElementType::IQ2_XS, 256, 74}, {ElementType::IQ3_XXS, 256, 98},
        {ElementType::IQ1_S, 256, 50}, {ElementType::IQ4_NL, 32, 18}, {ElementType::IQ3_S, 256, 110},
        {ElementType::IQ2_S, 256, 82}, {ElementType::IQ4_XS, 256, 136}, {ElementType::IQ1_M, 256, 56},
        {ElementType::TQ1_0, 256, 54}, {ElementType::TQ2_0, 256, 66}, {ElementType::MXFP4, 32, 17},
        {ElementType::I8, 1, 1},       {ElementType::I16, 1, 2},      {ElementType::I32, 1, 4},
        {ElementType::I64, 1, 8},      {ElementType::F64, 1, 8},
    };
    for (const auto& e : expected) {
        const ElementTypeInfo* info = element_type_info(e.t);
        ASSERT_NE(info, nullptr) << static_cast<uint32_t>(e.t);
        EXPECT_EQ(info->block_size, e.block) << info->name;
        EXPECT_EQ(info->type_size, e.bytes) << info->name;
    }
}

TEST(ElementType, RemovedAndUnknownIdsAreRejected) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u, 0xffffffffu}) {
        EXPECT_EQ(element_type_info(id), nullptr) << id;
    }
}

TEST(ElementType, NamesRoundTrip) {
    for (uint32_t id = 0; id < 64; ++id) {
        const ElementTypeInfo* info = element_type_info(id);
        if (!info) continue;
        auto parsed = element_type_from_name(info->name);
        ASSERT_TRUE(parsed.has_value()) << info->name;
        EXPECT_EQ(*parsed, info->type);
    }
    EXPECT_EQ(element_type_from_name("Q4_K"), ElementType::Q4_K);
    EXPECT_FALSE(element_type_from_name("q4_2").has_value());
}

TEST(ElementType, RowSizeChecksBlocksAndOverflow) {
    EXPECT_EQ(row_size_bytes(ElementType::Q4_0, 64), 36u);
    EXPECT_EQ(row_size_bytes(ElementType::F16, 7), 14u);
    EXPECT_FALSE(row_size_bytes(ElementType::Q4_0, 33).has_value());
    EXPECT_FALSE(row_size_bytes(ElementType::F64, UINT64_MAX / 4).has_value());
}

}  // namespace
}  // namespace cria
