// Decimal integer ranges as grammar: [min, max] split by sign and by digit
// count, then each equal-length range split digit by digit (the classic
// numeric-range-to-regex construction).

#include <string>

#include "cria/core/error.h"
#include "grammar/schema_converter.h"

namespace cria::grammar {
namespace {

constexpr uint64_t kLimit = 1000000000000000000ull;  // 10^18: keeps 10^digits in range

std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
    if (n == 0) return "";
    return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

// lo and hi have the same number of digits and lo <= hi.
std::string same_length(const std::string& lo, const std::string& hi) {
    if (lo.empty()) return "";
    if (lo == hi) return "\"" + lo + "\"";
    if (lo.size() == 1) return digit_class(lo[0], hi[0]);
    const size_t rest = lo.size() - 1;
    const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    if (lo[0] == hi[0]) return std::string("\"") + lo[0] + "\" " + same_length(lo_rest, hi_rest);
    std::string out = "(";
    auto sub = [&](const std::string& a, const std::string& b) {
        if (a == std::string(rest, '0') && b == std::string(rest, '9')) return any_digits(rest);
        return std::string("(") + same_length(a, b) + ")";
    };
    out += std::string("\"") + lo[0] + "\" " + sub(lo_rest, std::string(rest, '9'));
    if (lo[0] + 1 <= hi[0] - 1) out += std::string(" | ") + digit_class(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)) + " " + any_digits(rest);
    out += std::string(" | \"") + hi[0] + "\" " + sub(std::string(rest, '0'), hi_rest);
    return out + ")";
}

uint64_t pow10(size_t n) {
    uint64_t v = 1;
    while (n--) v *= 10;
    return v;
}

// Non-negative integers in [lo, hi], hi absent = unbounded. No leading zeros.
std::string non_negative(uint64_t lo, std::optional<uint64_t> hi) {
    std::string out;
    auto add = [&](const std::string& alt) { out += (out.empty() ? "" : " | ") + alt; };
    const size_t lo_digits = std::to_string(lo).size();
    size_t max_digits = hi ? std::to_string(*hi).size() : lo_digits;
    for (size_t d = lo_digits; d <= max_digits; ++d) {
        uint64_t first = d == 1 ? 0 : pow10(d - 1);
        uint64_t last = pow10(d) - 1;
        uint64_t a = std::max(lo, first), b = hi ? std::min(*hi, last) : last;
        if (a <= b) add(same_length(std::to_string(a), std::to_string(b)));
    }
    if (!hi) add("[1-9] [0-9]{" + std::to_string(lo_digits) + ",}");
    return out.empty() ? out : "(" + out + ")";
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max) {
    auto check = [](std::optional<int64_t> v) {
        if (v && (*v >= static_cast<int64_t>(kLimit) || *v <= -static_cast<int64_t>(kLimit))) {
            throw Error("json schema: integer bound " + std::to_string(*v) + " beyond +-10^18");
        }
    };
    check(min);
    check(max);
    if (min && max && *min > *max) throw Error("json schema: minimum above maximum: no integer allowed");
    std::string out;
    auto add = [&](const std::string& alt) { if (!alt.empty()) out += (out.empty() ? "" : " | ") + alt; };
    // Negative side: -(v) for v in [max(1, -max), -min].
    if (!min || *min < 0) {
        uint64_t lo_mag = (max && *max < 0) ? static_cast<uint64_t>(-*max) : 1;
        std::optional<uint64_t> hi_mag;
        if (min) hi_mag = static_cast<uint64_t>(-*min);
        add("\"-\" " + non_negative(lo_mag, hi_mag));
    }
    if (!max || *max >= 0) {
        uint64_t lo = min && *min > 0 ? static_cast<uint64_t>(*min) : 0;
        std::optional<uint64_t> hi;
        if (max) hi = static_cast<uint64_t>(*max);
        add(non_negative(lo, hi));
    }
    return "(" + out + ")";
}

}  // namespace cria::grammar
