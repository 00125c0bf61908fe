#include "vocab/ugm_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "cria/core/error.h"
#include "vocab/utf8.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

void ByteTrie::insert(std::string_view text, TokenId value) {
    int32_t node = 0;
    for (unsigned char c : text) {
        const uint64_t k = (static_cast<uint64_t>(node) << 8) | c;
        const auto it = children_.find(k);
        if (it != children_.end()) {
            node = it->second;
        } else {
            const auto next = static_cast<int32_t>(values_.size());
            values_.push_back(kNoToken);
            children_.emplace(k, next);
            node = next;
        }
    }
    values_[static_cast<size_t>(node)] = value;
}

size_t ByteTrie::longest_prefix(std::string_view text) const {
    // Like llama.cpp's naive_trie: the depth reached by walking, matched or not.
    int32_t node = 0;
    size_t depth = 0;
    for (unsigned char c : text) {
        node = child(node, c);
        if (node < 0) break;
        ++depth;
    }
    return depth;
}

UgmModel::UgmModel(const Vocab::Impl& v, const std::vector<uint8_t>& charsmap) : charsmap_(charsmap) {
    if (!charsmap_.empty()) {
        if (charsmap_.size() < 4) throw Error("tokenizer.ggml.precompiled_charsmap is too small");
        uint32_t blob = 0;
        std::memcpy(&blob, charsmap_.data(), 4);
        if (static_cast<uint64_t>(blob) + 4 >= charsmap_.size())
            throw Error("tokenizer.ggml.precompiled_charsmap: character map size out of bounds");
        xcda_size_ = blob / 4;
        replacements_at_ = 4 + blob;
    }
    float min_score = FLT_MAX;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const TokenData& t = v.tokens[id];
        if (t.attr & attr::kNormal) min_score = std::min(min_score, t.score);
        if (t.attr & (attr::kNormal | attr::kUserDefined | attr::kUnused)) tokens_.insert(t.text, static_cast<TokenId>(id));
        if (t.attr & attr::kUserDefined) user_defined_.insert(t.text, static_cast<TokenId>(id));
    }
    unknown_score_ = static_cast<double>(min_score) - 10.0;
}

uint32_t UgmModel::xcda(size_t index) const {
    if (index >= xcda_size_) throw Error("precompiled character map: index out of bounds");
    uint32_t node = 0;
    std::memcpy(&node, charsmap_.data() + 4 + index * 4, 4);
    return node;
}

UgmModel::Normalized UgmModel::normalize_prefix(std::string_view input, size_t offset) const {
    const std::string_view rest = input.substr(offset);
    // A user-defined token is kept as it is.
    const size_t user = user_defined_.longest_prefix(rest);
    if (user > 0) return {rest.substr(0, user), user};

    size_t best_length = 0;
    size_t best_value = 0;
    if (xcda_size_ > 0) {
        // Walk the XOR-compressed double array (base in bits 10..30, shifted
        // by bit 9; label in bits 0..7 and 31; leaf flag in bit 8).
        auto base = [&](size_t i) {
            const uint32_t n = xcda(i);
            return (n >> 10) << ((n & (1u << 9)) >> 6);
        };
        size_t node = base(0);
        for (size_t i = 0; i < rest.size(); ++i) {
            const auto c = static_cast<unsigned char>(rest[i]);
            if (c == 0) break;
            node ^= c;
            const uint32_t packed = xcda(node);
            if ((packed & ((1u << 31) | 0xFFu)) != c) break;
            const bool leaf = (packed >> 8) & 1;
            node ^= base(node);
            if (leaf) {
                best_length = i + 1;
                best_value = xcda(node) & ((1u << 31) - 1);
            }
        }
    }
    if (best_length > 0) {
        const size_t at = replacements_at_ + best_value;
        if (at >= charsmap_.size()) throw Error("precompiled character map: replacement out of bounds");
        const char* s = reinterpret_cast<const char*>(charsmap_.data() + at);
        const size_t max = charsmap_.size() - at;
        const size_t len = strnlen(s, max);
        if (len == max) throw Error("precompiled character map: unterminated replacement");
        return {std::string_view(s, len), best_length};
    }
    size_t next = offset;
    const uint32_t cp = utf8::decode(input, next);
    if (cp == utf8::kReplacement && next == offset + 1 && static_cast<unsigned char>(input[offset]) >= 0x80)
        return {"\xEF\xBF\xBD", 1};
    return {rest.substr(0, next - offset), next - offset};
}

std::string UgmModel::normalize(const Vocab::Impl& v, std::string_view input) const {
    std::string out;
    out.reserve(input.size() * 3);
    const std::string space = v.escape_whitespaces ? "\xE2\x96\x81" : " ";
    const bool prepend = !v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool append = v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool merge = v.remove_extra_whitespaces;
    bool space_prepended = false;
    bool in_word = false;
    for (size_t offset = 0; offset < input.size();) {
        const Normalized n = normalize_prefix(input, offset);
        for (char c : n.text) {
            if (c != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((prepend && !space_prepended) || merge) {
                        out += space;
                        space_prepended = true;
                    }
                }
                out.push_back(c);
            } else {
                in_word = false;
                if (!merge) out += space;
            }
        }
        offset += n.consumed;
    }
    if (append) out += space;
    return out;
}

void UgmModel::tokenize(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) const {
    const std::string s = normalize(v, text);
    const size_t n = s.size();
    if (n == 0) return;
    struct Best {
        TokenId id;
        size_t from;
        double score;
    };
    std::vector<Best> best(n + 1, {v.unk, 0, -DBL_MAX});
    best[0] = {v.unk, 0, 0};
    for (size_t at = 0; at < n;) {
        const size_t char_len = std::min(utf8::sequence_length(static_cast<unsigned char>(s[at])), n - at);
        const Best current = best[at];
        bool whole_char = false;
        int32_t node = 0;
        for (size_t end = at; end < n; ++end) {
            node = tokens_.child(node, static_cast<unsigned char>(s[end]));
            if (node < 0) break;
            const TokenId id = tokens_.value(node);
            if (id == kNoToken) continue;
            if (end + 1 - at == char_len) whole_char = true;
            const TokenData& t = v.tokens[static_cast<size_t>(id)];
            const double score = current.score + ((t.attr & attr::kUserDefined) ? 0.0 : t.score);
            if (score > best[end + 1].score) best[end + 1] = {id, at, score};
        }
        if (!whole_char) {
            const double score = current.score + unknown_score_;
            if (score > best[at + char_len].score) best[at + char_len] = {v.unk, at, score};
        }
        at += char_len;
    }
    // Walk back from the end; runs of unknowns collapse into one.
    const size_t first = out.size();
    bool prev_unknown = false;
    for (size_t at = n;;) {
        const Best& b = best[at];
        const bool unknown = b.id == v.unk;
        if (!(prev_unknown && unknown) && b.id != kNoToken) out.push_back(b.id);
        if (b.from == 0) break;
        prev_unknown = unknown;
        at = b.from;
    }
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

void tokenize_ugm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) {
    v.ugm->tokenize(v, text, out);
}

}  // namespace cria::vocab
