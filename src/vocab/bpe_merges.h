#pragma once
// The merge table of a byte-level BPE vocabulary, with every string that takes
// part in a merge interned to a small integer so merging compares integers.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cria/vocab/vocab.h"

namespace cria::vocab {

class BpeMerges {
public:
    struct Merge {
        int32_t rank;
        int32_t result;  // piece id of the joined text
    };

    // `merges` are "left right" lines, rank = position. `find_token` maps a
    // piece's text to its token id (or kNoToken).
    template <typename FindToken>
    BpeMerges(const std::vector<std::string>& merges, FindToken find_token) {
        for (size_t rank = 0; rank < merges.size(); ++rank) {
            const std::string& line = merges[rank];
            const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
            if (space == std::string::npos) continue;  // malformed: can never apply
            const int32_t left = intern(line.substr(0, space), find_token);
            const int32_t right = intern(line.substr(space + 1), find_token);
            const int32_t joined = intern(line.substr(0, space) + line.substr(space + 1), find_token);
            // The first occurrence of a pair wins, as in llama.cpp.
            table_.emplace(key(left, right), Merge{static_cast<int32_t>(rank), joined});
        }
        byte_piece_.fill(-1);
    }

    // Called once the byte texts are known (see bpe_tokenizer.cpp).
    template <typename FindToken>
    void set_byte_piece(uint8_t byte, const std::string& text, FindToken find_token) {
        byte_piece_[byte] = intern(text, find_token);
    }

    const Merge* find(int32_t left, int32_t right) const {
        if (left < 0 || right < 0) return nullptr;
        const auto it = table_.find(key(left, right));
        return it == table_.end() ? nullptr : &it->second;
    }
    int32_t byte_piece(uint8_t byte) const { return byte_piece_[byte]; }
    TokenId piece_token(int32_t piece) const { return piece < 0 ? kNoToken : piece_token_[static_cast<size_t>(piece)]; }
    size_t size() const { return table_.size(); }

private:
    static uint64_t key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    template <typename FindToken>
    int32_t intern(const std::string& text, FindToken find_token) {
        const auto [it, inserted] = pieces_.emplace(text, static_cast<int32_t>(piece_token_.size()));
        if (inserted) piece_token_.push_back(find_token(text));
        return it->second;
    }

    std::unordered_map<std::string, int32_t> pieces_;
    std::vector<TokenId> piece_token_;
    std::unordered_map<uint64_t, Merge> table_;
    std::array<int32_t, 256> byte_piece_{};
};

}  // namespace cria::vocab
