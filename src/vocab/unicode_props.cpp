#include "vocab/unicode_props.h"

#include <utf8proc.h>

namespace cria::vocab::unicode {

bool is_whitespace(uint32_t cp) {
    switch (cp) {
        case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
        case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

CharClass classify(uint32_t cp) {
    CharClass c;
    c.whitespace = is_whitespace(cp);
    if (cp > 0x10FFFF) return c;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
        case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
            c.letter = true; break;
        case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
            c.mark = true; break;
        case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
            c.number = true; break;
        case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
        case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
            c.punctuation = true; break;
        case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK: case UTF8PROC_CATEGORY_SO:
            c.symbol = true; break;
        case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
            c.control = true; break;
        default: break;
    }
    return c;
}

uint32_t to_lower(uint32_t cp) {
    if (cp > 0x10FFFF) return cp;
    return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

uint32_t nfd_base(uint32_t cp) {
    if (cp < 0xC0 || cp > 0x10FFFF) return cp;
    utf8proc_int32_t out[8];
    int last_boundclass = 0;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), out, 8,
                                                       UTF8PROC_DECOMPOSE, &last_boundclass);
    return n >= 1 ? static_cast<uint32_t>(out[0]) : cp;
}

}  // namespace cria::vocab::unicode
