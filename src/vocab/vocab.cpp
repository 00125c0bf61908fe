// Tokenizing and detokenizing: special-token partition, dispatch to the
// algorithm of the vocab type, pieces and the detokenizer's space cleaning.

#include <algorithm>
#include <cctype>
#include <cstring>

#include "cria/core/error.h"
#include "vocab/byte_encoding.h"
#include "vocab/utf8.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

namespace {

// A stretch of the input: either raw text or an already decided token.
struct Fragment {
    TokenId token;  // kNoToken for text
    size_t offset;
    size_t length;
};

bool is_c_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Cuts special tokens out of the text, longest token text first; what is left
// between them stays text. Control and unknown tokens only with parse_special.
// Whether [begin, end) overlaps one of the sorted literal spans.
bool overlaps_literal(std::span<const Vocab::Span> literal, size_t begin, size_t end) {
    auto it = std::upper_bound(literal.begin(), literal.end(), begin,
                               [](size_t b, const Vocab::Span& s) { return b < s.end; });
    return it != literal.end() && it->begin < end;
}

std::vector<Fragment> partition(const Vocab::Impl& v, std::string_view text, bool parse_special,
                                std::span<const Vocab::Span> literal = {}) {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kNoToken, 0, text.size()});
    std::vector<Fragment> next;
    for (const TokenId id : v.special_tokens) {
        const TokenData& t = v.tokens[static_cast<size_t>(id)];
        if (!parse_special && (t.attr & (attr::kControl | attr::kUnknown))) continue;
        if (t.text.empty()) continue;
        bool any = false;
        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token != kNoToken) {
                next.push_back(f);
                continue;
            }
            size_t start = f.offset;
            size_t length = f.length;
            size_t search = start;
            const bool control = (t.attr & (attr::kControl | attr::kUnknown)) != 0;
            while (true) {
                const size_t match = text.substr(0, start + length).find(t.text, search);
                if (match == std::string_view::npos) {
                    next.push_back({kNoToken, start, length});
                    break;
                }
                if (control && overlaps_literal(literal, match, match + t.text.size())) {
                    search = match + 1;  // a control token's text inside a literal span stays text
                    continue;
                }
                any = true;
                size_t left_length = match - start;
                if (t.attr & attr::kLStrip) {
                    while (left_length > 0 && is_c_space(text[start + left_length - 1])) --left_length;
                }
                if (left_length > 0) next.push_back({kNoToken, start, left_length});
                next.push_back({id, 0, 0});
                size_t right = match + t.text.size();
                size_t right_length = start + length - right;
                if (t.attr & attr::kRStrip) {
                    while (right_length > 0 && is_c_space(text[right])) ++right, --right_length;
                }
                if (right_length == 0) break;
                start = right;
                length = right_length;
                search = start;
            }
        }
        if (any) fragments.swap(next);
    }
    return fragments;
}

}  // namespace

// The ids of text already cut into special tokens and text fragments.
static std::vector<TokenId> tokenize_fragments(const Vocab::Impl& v, std::string_view text, bool add_special,
                                               const std::vector<Fragment>& fragments) {
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 4);

    switch (v.type) {
        case VocabType::Spm: {
            if (add_special && v.add_bos) out.push_back(v.bos);
            bool prev_special = true;  // the first text gets the leading space
            std::string piece;
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) {
                    out.push_back(f.token);
                    prev_special = true;
                    continue;
                }
                piece.clear();
                if (v.add_space_prefix && prev_special) piece = "\xe2\x96\x81";
                // SentencePiece writes spaces as U+2581.
                for (char c : text.substr(f.offset, f.length)) {
                    if (c == ' ') piece += "\xe2\x96\x81";
                    else piece.push_back(c);
                }
                tokenize_spm(v, piece, out);
                prev_special = false;
            }
            if (add_special && v.add_eos) out.push_back(v.eos);
            break;
        }
        case VocabType::Bpe: {
            if (add_special && v.add_bos) out.push_back(v.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) out.push_back(f.token);
                else tokenize_bpe(v, text.substr(f.offset, f.length), out);
            }
            if (add_special && v.add_eos) out.push_back(v.eos);
            break;
        }
        case VocabType::Wpm: {
            if (add_special) {
                if (v.bos == kNoToken) throw Error("this WordPiece vocab has no BOS ([CLS]) token");
                out.push_back(v.bos);
            }
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) out.push_back(f.token);
                else tokenize_wpm(v, text.substr(f.offset, f.length), out);
            }
            if (add_special) {
                if (v.sep == kNoToken) throw Error("this WordPiece vocab has no SEP token");
                out.push_back(v.sep);
            }
            break;
        }
        case VocabType::Ugm: {
            if (add_special && v.add_bos) out.push_back(v.bos);
            for (const Fragment& f : fragments) {
                if (f.token != kNoToken) out.push_back(f.token);
                else tokenize_ugm(v, text.substr(f.offset, f.length), out);
            }
            if (add_special && v.add_eos) out.push_back(v.eos);
            break;
        }
        case VocabType::None: break;
    }
    return out;
}

std::vector<TokenId> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    const Impl& v = *impl_;
    if (v.type == VocabType::None) throw Error("this model has no vocabulary; it cannot tokenize text");
    return tokenize_fragments(v, text, add_special, partition(v, text, parse_special));
}

std::vector<TokenId> Vocab::tokenize(std::string_view text, bool add_special, std::span<const Span> literal) const {
    const Impl& v = *impl_;
    if (v.type == VocabType::None) throw Error("this model has no vocabulary; it cannot tokenize text");
    for (size_t i = 0; i < literal.size(); ++i)
        if (literal[i].begin > literal[i].end || literal[i].end > text.size() ||
            (i > 0 && literal[i].begin < literal[i - 1].end))
            throw Error("tokenize: literal spans must be sorted, not overlapping and inside the text");
    return tokenize_fragments(v, text, add_special, partition(v, text, true, literal));
}


std::string Vocab::token_to_piece(TokenId id, bool special, int lstrip) const {
    const Impl& v = *impl_;
    // A model without a vocabulary ("no_vocab": llama.cpp's fixtures) has no
    // text for any of its token ids, as detokenize() gives none.
    if (v.type == VocabType::None) return {};
    if (id < 0 || static_cast<size_t>(id) >= v.tokens.size())
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                    std::to_string(v.tokens.size()) + ")");
    const TokenData& t = v.tokens[static_cast<size_t>(id)];
    if (!special && (t.attr & (attr::kUnknown | attr::kControl))) return {};

    std::string piece;
    if (!v.pieces.empty()) {
        piece = v.pieces[static_cast<size_t>(id)];
    } else if (t.attr & (attr::kUnknown | attr::kControl | attr::kUserDefined)) {
        piece = t.text;
    } else if (t.attr & attr::kByte) {
        // "<0xAB>" stands for the byte 0xAB.
        unsigned value = 0;
        if (t.text.size() == 6) value = static_cast<unsigned>(std::strtoul(t.text.substr(3, 2).c_str(), nullptr, 16));
        piece.assign(1, static_cast<char>(value));
    } else if (t.attr & attr::kNormal) {
        if (v.type == VocabType::Bpe && !v.escape_whitespaces) {
            // Undo the GPT-2 byte mapping.
            size_t offset = 0;
            while (offset < t.text.size()) {
                const size_t at = offset;
                const uint32_t cp = utf8::decode(t.text, offset);
                const auto byte = byte_encoding::code_point_to_byte(cp);
                if (byte) {
                    piece.push_back(static_cast<char>(*byte));
                } else {
                    // Not a byte character: llama.cpp writes a marker with the raw bytes.
                    piece += "[UNK_BYTE_0x";
                    static constexpr char kHex[] = "0123456789abcdef";
                    for (size_t k = at; k < offset; ++k) {
                        const auto c = static_cast<unsigned char>(t.text[k]);
                        piece.push_back(kHex[c >> 4]);
                        piece.push_back(kHex[c & 15]);
                    }
                    piece += t.text + "]";
                }
            }
        } else {
            // SentencePiece's U+2581 is a space.
            for (size_t k = 0; k < t.text.size(); ++k) {
                if (t.text.compare(k, 3, "\xe2\x96\x81") == 0) {
                    piece.push_back(' ');
                    k += 2;
                } else {
                    piece.push_back(t.text[k]);
                }
            }
        }
    }
    size_t skip = 0;
    while (static_cast<int>(skip) < lstrip && skip < piece.size() && piece[skip] == ' ') ++skip;
    return piece.substr(skip);
}

std::string Vocab::detokenize(std::span<const TokenId> ids, const DetokenizeOptions& options) const {
    const Impl& v = *impl_;
    if (v.type == VocabType::None) return {};
    bool remove_space = v.add_space_prefix;
    if (options.remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
        remove_space = false;
        ids = ids.subspan(1);
    }
    if (options.remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos) ids = ids.first(ids.size() - 1);

    std::string text;
    for (const TokenId id : ids) {
        text += token_to_piece(id, options.unparse_special, remove_space ? 1 : 0);
        remove_space = false;
    }

    const bool clean = options.clean_spaces < 0 ? v.clean_spaces : options.clean_spaces != 0;
    if (!clean || text.size() < 2) return text;

    // llama.cpp's three passes: " ?" " !" " ." " ,"; a lone apostrophe
    // between spaces; and contractions " 's" " 'm" " 're" " 've".
    std::string a;
    a.push_back(text[0]);
    for (size_t i = 1; i < text.size(); ++i) {
        const char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
        a.push_back(x);
    }
    std::string b;
    if (!a.empty()) b.push_back(a[0]);
    for (size_t i = 1; i < a.size(); ++i) {
        const char x = a[i];
        if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
            b.pop_back();
            b.push_back(x);
            a[++i] = '\0';  // drop the space after it (llama.cpp blanks it in place)
            continue;
        }
        b.push_back(x);
    }
    std::string c;
    if (!b.empty()) c.push_back(b[0]);
    for (size_t i = 1; i < b.size(); ++i) {
        const char x = b[i];
        if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
            const char x1 = b[i + 1];
            if (x1 == 's' || x1 == 'm') {
                c.pop_back();
            } else if (i + 2 < b.size()) {
                const char x2 = b[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
            }
        }
        c.push_back(x);
    }
    return c;
}

VocabType Vocab::type() const { return impl_->type; }
const std::string& Vocab::model() const { return impl_->model; }
const std::string& Vocab::pre() const { return impl_->pre; }
size_t Vocab::size() const { return impl_->tokens.size(); }
const TokenData& Vocab::token(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= impl_->tokens.size())
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->tokens[static_cast<size_t>(id)];
}
TokenId Vocab::find(std::string_view text) const { return impl_->find(text); }
TokenId Vocab::bos() const { return impl_->bos; }
TokenId Vocab::eos() const { return impl_->eos; }
TokenId Vocab::eot() const { return impl_->eot; }
TokenId Vocab::unk() const { return impl_->unk; }
TokenId Vocab::sep() const { return impl_->sep; }
TokenId Vocab::pad() const { return impl_->pad; }
TokenId Vocab::newline() const { return impl_->newline; }
bool Vocab::add_bos() const { return impl_->add_bos; }
bool Vocab::add_eos() const { return impl_->add_eos; }
bool Vocab::add_sep() const { return impl_->add_sep; }
bool Vocab::add_space_prefix() const { return impl_->add_space_prefix; }
bool Vocab::clean_spaces() const { return impl_->clean_spaces; }
const std::vector<std::string>& Vocab::warnings() const { return impl_->warnings; }
bool Vocab::is_eog(TokenId id) const { return id != kNoToken && impl_->eog.count(id) > 0; }
bool Vocab::is_control(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < impl_->tokens.size() && impl_->has(attr::kControl, id);
}

}  // namespace cria::vocab
