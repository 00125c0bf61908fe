// -e/--escape: llama.cpp's string_process_escapes, case by case.

#include <gtest/gtest.h>

#include "cria/core/escapes.h"

namespace cria {
namespace {

TEST(Escapes, KnownEscapesBecomeCharacters) {
    EXPECT_EQ(process_escapes(R"(a\nb\rc\td\'e\"f\\g)"), "a\nb\rc\td'e\"f\\g");
    EXPECT_EQ(process_escapes(R"(\x41\x62c)"), "Abc");
}

TEST(Escapes, OthersStayAsWritten) {
    EXPECT_EQ(process_escapes(R"(\q\0)"), R"(\q\0)");
    EXPECT_EQ(process_escapes("end\\"), "end\\");          // a trailing backslash
    EXPECT_EQ(process_escapes(R"(\xZZ!)"), R"(\xZZ!)");    // not hex
    EXPECT_EQ(process_escapes(R"(\x41)"), "A");
    EXPECT_EQ(process_escapes(R"(\x4)"), R"(\x4)");  // one digit only
    EXPECT_EQ(process_escapes(""), "");
    EXPECT_EQ(process_escapes(R"(\\n)"), "\\n");  // an escaped backslash, then n
}

}  // namespace
}  // namespace cria
