#pragma once
// A model's vocabulary and its tokenizer: text -> token ids -> text.
//
// Behaviour follows llama.cpp token for token (its test vectors are our
// tests): SentencePiece BPE with scores and byte fallback ("llama"), byte-level
// BPE with merges and a named pre-tokenizer ("gpt2"), WordPiece ("bert") and
// Unigram ("t5"). Special tokens are matched in the text only when asked.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cria::gguf {
class File;
}

namespace cria::vocab {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

enum class VocabType { None, Spm, Bpe, Wpm, Ugm };

// Token type ids as GGUF stores them in tokenizer.ggml.token_type.
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Per-token attribute bits (a token type becomes one of the first six; the
// strip bits are added by model-specific rules).
namespace attr {
inline constexpr uint32_t kUndefined = 0;
inline constexpr uint32_t kUnknown = 1u << 0;
inline constexpr uint32_t kUnused = 1u << 1;
inline constexpr uint32_t kNormal = 1u << 2;
inline constexpr uint32_t kControl = 1u << 3;
inline constexpr uint32_t kUserDefined = 1u << 4;
inline constexpr uint32_t kByte = 1u << 5;
inline constexpr uint32_t kLStrip = 1u << 7;  // eat whitespace left of the token when parsing specials
inline constexpr uint32_t kRStrip = 1u << 8;  // ... and right of it
}  // namespace attr

struct TokenData {
    std::string text;
    float score = 0.0f;
    uint32_t attr = attr::kNormal;
};

// Everything a vocabulary is built from. from_gguf() fills it from the
// tokenizer.* metadata; tests can build small vocabularies by hand.
struct VocabSpec {
    std::string model;  // tokenizer.ggml.model: "llama", "gpt2", "bert", "t5", "none"
    std::string pre;    // tokenizer.ggml.pre (BPE only; "" means "default")
    std::string model_name;  // general.name, for the few per-model token rules
    std::vector<std::string> tokens;
    std::vector<float> scores;     // empty: all 0
    std::vector<int32_t> types;    // empty: all normal
    std::vector<std::string> merges;  // "left right", rank = index
    std::vector<uint8_t> precompiled_charsmap;  // Unigram normaliser, may be empty

    // Special token ids; kNoToken keeps the model type's default.
    TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken, sep = kNoToken,
            pad = kNoToken, mask = kNoToken;
    // Optional flags; unset ones take the model type's default.
    int add_bos = -1, add_eos = -1, add_sep = -1, add_space_prefix = -1, remove_extra_whitespaces = -1;
    int normalizer_lowercase = -1, normalizer_strip_accents = -1;
};

struct DetokenizeOptions {
    bool remove_special = false;   // drop a leading BOS / trailing EOS the vocab adds itself
    bool unparse_special = false;  // render control / unknown tokens as their text
    int clean_spaces = -1;         // -1: as the vocab says; 0: never; 1: always ("a ," -> "a,")
};

class Vocab {
public:
    // Reads the tokenizer.* metadata. Throws cria::Error on missing or
    // malformed metadata and on pre-tokenizers we do not know.
    static Vocab from_gguf(const gguf::File& file);
    static Vocab load(const std::string& path);  // opens the file (weights are not read)
    static Vocab build(VocabSpec spec);

    Vocab(Vocab&&) noexcept;
    Vocab& operator=(Vocab&&) noexcept;
    ~Vocab();

    VocabType type() const;
    const std::string& model() const;
    const std::string& pre() const;  // the pre-tokenizer name in effect (BPE), else ""
    size_t size() const;
    const TokenData& token(TokenId id) const;  // throws cria::Error when out of range
    TokenId find(std::string_view text) const;  // exact token text, kNoToken when absent

    TokenId bos() const;
    TokenId eos() const;
    TokenId eot() const;
    TokenId unk() const;
    TokenId sep() const;
    TokenId pad() const;
    TokenId newline() const;
    bool add_bos() const;
    bool add_eos() const;
    bool add_sep() const;
    bool add_space_prefix() const;
    bool clean_spaces() const;
    bool is_eog(TokenId id) const;    // ends generation (EOS, EOT, <|im_end|>, ...)
    // Non-fatal notes from loading (e.g. no pre-tokenizer named: "default" used).
    const std::vector<std::string>& warnings() const;
    bool is_control(TokenId id) const;

    // Text to ids. add_special adds BOS / EOS / SEP as the vocab asks;
    // parse_special turns the text of control tokens into those tokens
    // (user-defined tokens are always matched). Any bytes are accepted;
    // invalid UTF-8 is handled as llama.cpp does (byte fallback or U+FFFD).
    std::vector<TokenId> tokenize(std::string_view text, bool add_special = true, bool parse_special = false) const;
    // As above with parse_special, except inside `literal` (byte ranges
    // [begin, end) of text, sorted, not overlapping): a control token's text
    // there is text, never the token. For a rendered chat prompt whose
    // message contents must not be able to forge the template's markup.
    struct Span {
        size_t begin = 0, end = 0;
    };
    std::vector<TokenId> tokenize(std::string_view text, bool add_special, std::span<const Span> literal) const;

    // One token's text. `special` renders control / unknown tokens, else
    // they give "". lstrip removes up to that many leading spaces.
    std::string token_to_piece(TokenId id, bool special = true, int lstrip = 0) const;
    // Ids back to text (SPM's added leading space removed, spaces cleaned
    // for vocabs that ask for it).
    std::string detokenize(std::span<const TokenId> ids, const DetokenizeOptions& options = {}) const;

    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    explicit Vocab(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Names of all pre-tokenizers we implement (tokenizer.ggml.pre values).
std::vector<std::string> known_pre_tokenizers();

}  // namespace cria::vocab
