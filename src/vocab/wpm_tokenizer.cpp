// WordPiece ("bert" vocabs): normalise (optionally lowercase and strip
// accents), split on whitespace and punctuation, then cut each word greedily
// into the longest known pieces. A word that cannot be cut becomes [UNK].

#include "vocab/unicode_props.h"
#include "vocab/utf8.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

namespace {

bool is_chinese_char(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B920 && cp <= 0x2CEAF) ||  // sic: the HF code starts at 0x2B920
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<std::string> split_words(const Vocab::Impl& v, std::string_view text) {
    std::vector<std::string> words(1);
    for (uint32_t cp : utf8::decode_all(text)) {
        if (v.strip_accents) cp = unicode::nfd_base(cp);
        const unicode::CharClass c = unicode::classify(cp);
        if (c.whitespace) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (cp == 0 || cp == utf8::kReplacement || c.control) continue;
        if (v.strip_accents && c.mark) continue;
        const std::string s = utf8::encode(v.lowercase ? unicode::to_lower(cp) : cp);
        if (c.punctuation || (cp < 0x7F && c.symbol) || is_chinese_char(cp)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = s;
            words.emplace_back();
        } else {
            words.back() += s;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

void tokenize_wpm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) {
    for (const std::string& word : split_words(v, text)) {
        if (word.empty()) continue;
        const std::string marked = "\xe2\x96\x81" + word;  // the word-start marker
        const size_t n = marked.size();
        const size_t before = out.size();
        for (size_t i = 0; i < n; ++i) {
            bool matched = false;
            for (size_t j = std::min(n, i + v.max_token_length + 1); j > i; --j) {
                const TokenId id = v.find(std::string_view(marked).substr(i, j - i));
                if (id != kNoToken) {
                    out.push_back(id);
                    matched = true;
                    i = j - 1;
                    break;
                }
            }
            if (!matched) {
                out.resize(before);
                break;
            }
        }
        if (out.size() == before && v.unk != kNoToken) out.push_back(v.unk);
    }
}

}  // namespace cria::vocab
