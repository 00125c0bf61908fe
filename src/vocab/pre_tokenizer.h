#pragma once
// Pre-tokenization for byte-level BPE: before merging, text is cut into
// "words" by a model-specific list of regular expressions. Each expression
// splits every piece left by the one before; matches and the text between
// matches both become pieces (llama.cpp's unicode_regex_split semantics).
// Expressions run on PCRE2 (JIT, UTF, Unicode properties).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cria::vocab {

// How a named pre-tokenizer behaves (tokenizer.ggml.pre).
struct PreTokenizerConfig {
    std::vector<std::string> names;     // every tokenizer.ggml.pre value that selects it
    std::vector<std::string> patterns;  // regexes, in the notation of the HF tokenizer.json
    bool clean_spaces = true;           // detokenizer removes " ," etc.
    bool ignore_merges = false;         // a word that is a whole token is not merged
    bool add_bos = false;               // default add_bos (metadata can override)
    bool add_sep = false;
    bool no_bos_token = false;          // the model has no BOS by default
};

// nullptr when the name is unknown.
const PreTokenizerConfig* find_pre_tokenizer(std::string_view name);
const std::vector<PreTokenizerConfig>& all_pre_tokenizers();

struct TextPiece {
    size_t offset;
    size_t length;
};

class PreTokenizer {
public:
    // Compiles the patterns; throws cria::Error if one does not compile.
    explicit PreTokenizer(const std::vector<std::string>& patterns);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Splits `text` (valid UTF-8; see utf8::sanitize) into pieces, in order,
    // covering the text exactly. Safe to call from several threads.
    void split(std::string_view text, std::vector<TextPiece>& pieces) const;

    // The pattern as handed to PCRE2 (after rewriting \s, \S, \d to the
    // character sets llama.cpp uses).
    static std::string to_pcre2(const std::string& pattern);

private:
    struct Compiled;
    std::vector<std::unique_ptr<Compiled>> compiled_;
};

}  // namespace cria::vocab
