#pragma once
// The vocabulary's private state, shared by the tokenizer algorithms.

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cria/vocab/vocab.h"
#include "vocab/pre_tokenizer.h"

namespace cria::vocab {

class BpeMerges;
class UgmModel;

struct Vocab::Impl {
    VocabType type = VocabType::None;
    std::string model;
    std::string pre;

    std::vector<TokenData> tokens;
    // Views into tokens[i].text; tokens is never resized after building.
    std::unordered_map<std::string_view, TokenId> by_text;
    size_t max_token_length = 0;

    TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken, sep = kNoToken,
            pad = kNoToken, mask = kNoToken, newline = kNoToken;
    bool add_bos = false, add_eos = false, add_sep = false;
    bool add_space_prefix = false;
    bool clean_spaces = false;
    bool ignore_merges = false;
    bool remove_extra_whitespaces = false;
    bool escape_whitespaces = true;
    bool treat_whitespace_as_suffix = false;
    bool lowercase = false;      // WordPiece normaliser
    bool strip_accents = false;  // WordPiece normaliser

    std::set<TokenId> eog;
    std::vector<std::string> warnings;
    std::vector<TokenId> special_tokens;  // control / user-defined / unknown, longest text first
    std::vector<std::string> pieces;      // token_to_piece(id, special = true)
    // SPM: ASCII bytes that occur in no token of more than one byte.
    std::array<bool, 256> spm_isolated{};

    std::unique_ptr<PreTokenizer> pre_tokenizer;
    std::unique_ptr<BpeMerges> merges;
    std::unique_ptr<UgmModel> ugm;

    Impl();
    ~Impl();

    TokenId find(std::string_view text) const {
        const auto it = by_text.find(text);
        return it == by_text.end() ? kNoToken : it->second;
    }
    bool has(uint32_t id_attr, TokenId id) const { return (tokens[static_cast<size_t>(id)].attr & id_attr) != 0; }
    // The token for one raw byte: <0xXX> (or the byte itself) for SPM / UGM.
    TokenId spm_byte_token(uint8_t byte) const;
};

// Algorithms, one file each. They append to `out`.
void tokenize_spm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out);
void tokenize_bpe(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out);
void tokenize_wpm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out);
void tokenize_ugm(const Vocab::Impl& v, std::string_view text, std::vector<TokenId>& out);

}  // namespace cria::vocab
