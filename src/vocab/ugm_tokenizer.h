#pragma once
// Unigram ("t5" vocabs): normalise with the model's precompiled character
// map, then pick the segmentation with the highest total log-probability
// (Viterbi over a trie of the token texts).

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cria/vocab/vocab.h"

namespace cria::vocab {

// A byte trie over token texts.
class ByteTrie {
public:
    ByteTrie() : values_(1, kNoToken) {}
    void insert(std::string_view text, TokenId value);
    // Child of `node` for `byte`, or -1.
    int32_t child(int32_t node, unsigned char byte) const {
        const auto it = children_.find((static_cast<uint64_t>(node) << 8) | byte);
        return it == children_.end() ? -1 : it->second;
    }
    TokenId value(int32_t node) const { return values_[static_cast<size_t>(node)]; }
    // Length of the longest prefix of `text` that is a stored key (0 if none).
    size_t longest_prefix(std::string_view text) const;

private:
    std::unordered_map<uint64_t, int32_t> children_;
    std::vector<TokenId> values_;
};

class UgmModel {
public:
    UgmModel(const Vocab::Impl& v, const std::vector<uint8_t>& charsmap);
    void tokenize(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out) const;

private:
    struct Normalized {
        std::string_view text;
        size_t consumed;
    };
    Normalized normalize_prefix(std::string_view input, size_t offset) const;
    std::string normalize(const Vocab::Impl& v, std::string_view input) const;
    uint32_t xcda(size_t index) const;

    std::vector<uint8_t> charsmap_;
    size_t xcda_size_ = 0;        // entries of the double array
    size_t replacements_at_ = 0;  // where the replacement strings start
    ByteTrie tokens_;
    ByteTrie user_defined_;
    double unknown_score_ = 0;
};

}  // namespace cria::vocab
