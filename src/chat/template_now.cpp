// YYYY-MM-DD[THH:MM] -> seconds since the epoch, UTC (see template_now.h).

#include "cria/chat/template_now.h"

#include "cria/core/error.h"

namespace cria::chat {

namespace {

bool digits(const std::string& s, size_t pos, size_t n, int& out) {
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
        if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil).
long long days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    const long long era = (y >= 0 ? y : y - 399) / 400;
    const long long yoe = y - era * 400;
    const long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

}  // namespace

long long parse_template_now(const std::string& text) {
    const auto bad = [&](const std::string& why) {
        return Error("--now: '" + text + "' " + why + " (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)");
    };
    int y = 0, mo = 0, d = 0, h = 0, mi = 0;
    const bool date_ok = (text.size() == 10 || text.size() == 16) && digits(text, 0, 4, y) && text[4] == '-' &&
                         digits(text, 5, 2, mo) && text[7] == '-' && digits(text, 8, 2, d);
    if (!date_ok) throw bad("is not a date");
    if (text.size() == 16 && !(text[10] == 'T' && digits(text, 11, 2, h) && text[13] == ':' && digits(text, 14, 2, mi)))
        throw bad("is not a date and time");
    static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12) throw bad("has no such month");
    if (d < 1 || d > month_days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0)) throw bad("has no such day");
    if (h > 23 || mi > 59) throw bad("has no such time");
    return days_from_civil(y, mo, d) * 86400LL + h * 3600LL + mi * 60LL;
}

}  // namespace cria::chat
