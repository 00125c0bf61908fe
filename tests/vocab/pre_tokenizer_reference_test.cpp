// llama.cpp does not run the GPT-2 and Llama-3 expressions through a regex
// engine: it has hand-written splitters for them. These tests re-state those
// splitters as plain code-point loops (from the algorithm as llama.cpp
// describes it) and check that our PCRE2 expressions cut random text exactly
// the same way.

#include <gtest/gtest.h>

#include <random>

#include "vocab/pre_tokenizer.h"
#include "vocab/unicode_props.h"
#include "vocab/utf8.h"

namespace {

using cria::vocab::unicode::CharClass;
using cria::vocab::unicode::classify;

constexpr uint32_t kOut = 0xFFFFFFFF;  // "past the end of the piece"

struct Text {
    std::vector<uint32_t> cps;
    uint32_t at(size_t i) const { return i < cps.size() ? cps[i] : kOut; }
    CharClass cls(size_t i) const { return i < cps.size() ? classify(cps[i]) : CharClass{}; }
    // Any code point has some class; only "past the end" has none.
    bool exists(size_t i) const { return i < cps.size(); }
};

bool other(const CharClass& c) { return !(c.whitespace || c.letter || c.number); }

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::vector<size_t> gpt2_reference(const Text& t) {
    std::vector<size_t> cuts;
    size_t prev = 0;
    auto cut = [&](size_t end) {
        if (end > prev) cuts.push_back(end - prev);
        const size_t n = end - prev;
        prev = end;
        return n;
    };
    const size_t n = t.cps.size();
    for (size_t pos = 0; pos < n;) {
        const uint32_t c = t.at(pos);
        if (c == '\'' && pos + 1 < n) {
            const uint32_t c1 = t.at(pos + 1);
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') { pos += cut(pos + 2); continue; }
            if (pos + 2 < n) {
                const uint32_t c2 = t.at(pos + 2);
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) { pos += cut(pos + 3); continue; }
            }
        }
        const size_t look = pos + (c == ' ' ? 1 : 0);
        CharClass f = t.cls(look);
        if (t.exists(look) && f.letter) {
            pos = look;
            while (t.exists(pos) && t.cls(pos).letter) ++pos;
            cut(pos);
            continue;
        }
        if (t.exists(look) && f.number) {
            pos = look;
            while (t.exists(pos) && t.cls(pos).number) ++pos;
            cut(pos);
            continue;
        }
        if (t.exists(look) && other(f)) {
            pos = look;
            while (t.exists(pos) && other(t.cls(pos))) ++pos;
            cut(pos);
            continue;
        }
        size_t spaces = 0;
        while (t.exists(pos + spaces) && t.cls(pos + spaces).whitespace) ++spaces;
        if (spaces > 1 && t.exists(pos + spaces)) { pos += spaces - 1; cut(pos); continue; }
        if (spaces > 0) { pos += spaces; cut(pos); continue; }
        cut(++pos);
    }
    return cuts;
}

uint32_t lower_ascii(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
std::vector<size_t> llama3_reference(const Text& t) {
    std::vector<size_t> cuts;
    size_t prev = 0;
    auto cut = [&](size_t end) {
        if (end > prev) cuts.push_back(end - prev);
        const size_t n = end - prev;
        prev = end;
        return n;
    };
    const size_t n = t.cps.size();
    for (size_t pos = 0; pos < n;) {
        const uint32_t c = t.at(pos);
        const CharClass f = t.cls(pos);
        if (c == '\'' && pos + 1 < n) {
            const uint32_t c1 = lower_ascii(t.at(pos + 1));
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') { pos += cut(pos + 2); continue; }
            if (pos + 2 < n) {
                const uint32_t c2 = lower_ascii(t.at(pos + 2));
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) { pos += cut(pos + 3); continue; }
            }
        }
        if (!(c == '\r' || c == '\n' || f.number)) {
            if (f.letter || (t.exists(pos + 1) && t.cls(pos + 1).letter)) {
                ++pos;
                while (t.exists(pos) && t.cls(pos).letter) ++pos;
                cut(pos);
                continue;
            }
        }
        if (f.number) {
            size_t start = pos;
            while (t.exists(pos) && t.cls(pos).number) {
                if (++pos - start >= 3) { cut(pos); start = pos; }
            }
            cut(pos);
            continue;
        }
        const size_t look = pos + (c == ' ' ? 1 : 0);
        if (t.exists(look) && other(t.cls(look))) {
            pos = look;
            while (t.exists(pos) && other(t.cls(pos))) ++pos;
            while (t.at(pos) == '\r' || t.at(pos) == '\n') ++pos;
            cut(pos);
            continue;
        }
        if (c == ' ' && !t.exists(look)) { cut(++pos); continue; }  // lone space at the end
        size_t spaces = 0, last_newline_end = 0;
        while (t.exists(pos + spaces) && t.cls(pos + spaces).whitespace) {
            const uint32_t w = t.at(pos + spaces);
            if (w == '\r' || w == '\n') last_newline_end = pos + spaces + 1;
            ++spaces;
        }
        if (last_newline_end > 0) { pos = last_newline_end; cut(pos); continue; }
        if (spaces > 1 && t.exists(pos + spaces)) { pos += spaces - 1; cut(pos); continue; }
        if (spaces > 0) { pos += spaces; cut(pos); continue; }
        cut(++pos);
    }
    return cuts;
}

// Our pieces, measured in code points.
std::vector<size_t> pcre2_split(const cria::vocab::PreTokenizer& p, const std::string& text) {
    std::vector<cria::vocab::TextPiece> pieces;
    p.split(text, pieces);
    std::vector<size_t> lengths;
    for (const auto& piece : pieces) {
        lengths.push_back(cria::vocab::utf8::decode_all(std::string_view(text).substr(piece.offset, piece.length)).size());
    }
    return lengths;
}

class ReferenceSplit : public ::testing::Test {
protected:
    // Characters that exercise every branch: letters of several scripts and
    // cases, digits and other numbers, contractions, punctuation, symbols
    // ('~'), marks, controls, unassigned code points, ASCII and Unicode spaces.
    const std::vector<uint32_t> alphabet = {'a', 'Z', 's', 't', 'r', 'e', 'v', 'l', 'm', 'd', 'S', 'T', 'L', 'E',
                                            '\'', '1', '9', ' ', ' ', ' ', '\n', '\r', '\t', '.', ',', '!', '~', '$',
                                            0x00E9, 0x00BD, 0x00B2, 0x6211, 0x3000, 0x2028, 0x00A0, 0x1F999, 0x0301,
                                            0x0001, 0x0378, 0xFFFD, 0x180E, 0x0660, 0x2160};
    std::string random_text(std::mt19937& rng, Text& t) {
        std::uniform_int_distribution<size_t> len(0, 16), pick(0, alphabet.size() - 1);
        t.cps.clear();
        std::string s;
        for (size_t n = len(rng); n > 0; --n) {
            const uint32_t cp = alphabet[pick(rng)];
            t.cps.push_back(cp);
            cria::vocab::utf8::append(s, cp);
        }
        return s;
    }
};

TEST_F(ReferenceSplit, Gpt2MatchesTheHandWrittenSplitter) {
    const cria::vocab::PreTokenizer p(cria::vocab::find_pre_tokenizer("gpt-2")->patterns);
    std::mt19937 rng(1234);
    Text t;
    for (int i = 0; i < 20000; ++i) {
        const std::string s = random_text(rng, t);
        ASSERT_EQ(pcre2_split(p, s), gpt2_reference(t)) << "text: '" << s << "'";
    }
}

TEST_F(ReferenceSplit, Llama3MatchesTheHandWrittenSplitter) {
    const cria::vocab::PreTokenizer p(cria::vocab::find_pre_tokenizer("llama3")->patterns);
    std::mt19937 rng(5678);
    Text t;
    for (int i = 0; i < 20000; ++i) {
        const std::string s = random_text(rng, t);
        ASSERT_EQ(pcre2_split(p, s), llama3_reference(t)) << "text: '" << s << "'";
    }
}

}  // namespace
