// cria template --now: the date strftime_now() renders, parsed strictly.

#include <gtest/gtest.h>

#include "cria/chat/chat_template.h"
#include "cria/chat/template_now.h"
#include "cria/core/error.h"

namespace cria::chat {
namespace {

TEST(TemplateNow, DatesAndTimesAreUtcSeconds) {
    EXPECT_EQ(parse_template_now("1970-01-01"), 0);
    EXPECT_EQ(parse_template_now("1970-01-02T00:01"), 86400 + 60);
    EXPECT_EQ(parse_template_now("2000-02-29"), 951782400);   // a leap day
    EXPECT_EQ(parse_template_now("2026-12-01T13:45"), 1796132700);
}

TEST(TemplateNow, AnythingElseIsRefused) {
    for (const char* bad : {"", "2026-12-1", "2026/12/01", "2026-13-01", "2026-00-10", "2026-02-29", "2100-02-29",
                            "2026-04-31", "2026-12-01T24:00", "2026-12-01T12:60", "2026-12-01 12:00",
                            "2026-12-01T1200", "2026-12-01T12:00:00", "26-12-01", "yyyy-mm-dd"})
        EXPECT_THROW(parse_template_now(bad), Error) << bad;
}

TEST(TemplateNow, StrftimeNowRendersThatMoment) {
    ChatTemplateInputs in;
    in.now = parse_template_now("2024-07-23T09:05");
    EXPECT_EQ(render_chat_template(R"({{ strftime_now("%d %b %Y %H:%M %A") }})", in), "23 Jul 2024 09:05 Tuesday");
}

}  // namespace
}  // namespace cria::chat
