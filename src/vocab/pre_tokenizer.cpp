#define PCRE2_CODE_UNIT_WIDTH 8
#include "vocab/pre_tokenizer.h"

#include <pcre2.h>

#include "cria/core/error.h"

namespace cria::vocab {

namespace {

// Unicode White_Space, the set llama.cpp's \s stands for. PCRE2's own \s with
// UCP also takes U+180E, which Unicode no longer counts as a space.
constexpr std::string_view kWhitespaceSet =
    "\\t-\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string pcre2_error_text(int code) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof buffer);
    return reinterpret_cast<const char*>(buffer);
}

}  // namespace

std::string PreTokenizer::to_pcre2(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size() * 2);
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[i + 1];
            ++i;
            if (e == 's') {
                out += in_class ? std::string(kWhitespaceSet) : "[" + std::string(kWhitespaceSet) + "]";
            } else if (e == 'S' && !in_class) {
                out += "[^" + std::string(kWhitespaceSet) + "]";
            } else if (e == 'd') {
                // std::regex's \d (what llama.cpp runs) is ASCII only.
                out += in_class ? "0-9" : "[0-9]";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = true;
            out += c;
            // A ']' or '^]' right after '[' is a literal, not the end.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
            continue;
        }
        if (c == ']' && in_class) in_class = false;
        out += c;
    }
    return out;
}

struct PreTokenizer::Compiled {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
    for (const std::string& pattern : patterns) {
        const std::string translated = to_pcre2(pattern);
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        auto compiled = std::make_unique<Compiled>();
        compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK, &error,
                                       &error_offset, nullptr);
        if (compiled->code == nullptr) {
            throw Error("pre-tokenizer regex does not compile at offset " + std::to_string(error_offset) + " (" +
                        pcre2_error_text(error) + "): " + pattern);
        }
        compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
        compiled_.push_back(std::move(compiled));
    }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Per-call matching state: match data and a JIT stack big enough for long
// runs of whitespace (lookaheads after \s+ can nest deeply).
class Matcher {
public:
    explicit Matcher(const pcre2_code* code, bool jit) {
        data_ = pcre2_match_data_create_from_pattern(code, nullptr);
        context_ = pcre2_match_context_create(nullptr);
        if (jit) {
            stack_ = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
            pcre2_jit_stack_assign(context_, nullptr, stack_);
        }
        if (!data_ || !context_) throw Error("out of memory creating a regex matcher");
    }
    ~Matcher() {
        pcre2_match_data_free(data_);
        pcre2_match_context_free(context_);
        if (stack_) pcre2_jit_stack_free(stack_);
    }
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;

    // Finds the next match in subject[0, length) at or after `start`.
    // Returns false when there is none.
    bool find(const pcre2_code* code, const char* subject, size_t length, size_t start, uint32_t options,
              size_t& match_begin, size_t& match_end) {
        const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject), length, start,
                                   options | PCRE2_NO_UTF_CHECK, data_, context_);
        if (rc == PCRE2_ERROR_NOMATCH) return false;
        if (rc < 0) throw Error("pre-tokenizer regex failed: " + pcre2_error_text(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data_);
        match_begin = ov[0];
        match_end = ov[1];
        return true;
    }

private:
    pcre2_match_data* data_ = nullptr;
    pcre2_match_context* context_ = nullptr;
    pcre2_jit_stack* stack_ = nullptr;
};

size_t next_code_point(const char* s, size_t length, size_t pos) {
    ++pos;
    while (pos < length && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
    return pos;
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<TextPiece>& pieces) const {
    pieces.clear();
    if (text.empty()) return;
    pieces.push_back({0, text.size()});
    std::vector<TextPiece> next;
    for (const auto& compiled : compiled_) {
        Matcher matcher(compiled->code, compiled->jit);
        next.clear();
        next.reserve(pieces.size() * 2);
        for (const TextPiece& piece : pieces) {
            const char* subject = text.data() + piece.offset;
            const size_t length = piece.length;
            size_t done = 0;  // end of the last match: text before a match is a piece too
            size_t search = 0;
            uint32_t options = 0;
            while (search <= length) {
                size_t begin = 0, end = 0;
                if (!matcher.find(compiled->code, subject, length, search, options, begin, end)) {
                    if (options == 0) break;
                    // An empty match was here; like std::regex_iterator, retry one character on.
                    options = 0;
                    search = next_code_point(subject, length, search);
                    continue;
                }
                if (begin > done) next.push_back({piece.offset + done, begin - done});
                if (end > begin) next.push_back({piece.offset + begin, end - begin});
                done = end;
                search = end;
                // After an empty match, the next one must not be empty at the same place.
                options = (end == begin) ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
                if (search == length && end == begin) break;
            }
            if (done < length) next.push_back({piece.offset + done, length - done});
        }
        pieces.swap(next);
    }
}

}  // namespace cria::vocab
