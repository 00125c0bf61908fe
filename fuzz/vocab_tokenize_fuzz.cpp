// libFuzzer target for the tokenizers: random bytes in, no crash, and the
// round trip holds where the vocab is lossless.
//
// Input: byte 0 picks the vocab, byte 1 the flags, the rest is the text.
// Vocab files are read from the repository (run from its root, or set
// CRIA_SOURCE_DIR).
//   build-fuzz/fuzz/vocab_tokenize_fuzz -max_total_time=300 fuzz/corpus/vocab

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/vocab/streaming_detokenizer.h"
#include "cria/vocab/vocab.h"

namespace {

using cria::vocab::Vocab;

struct Entry {
    const char* path;
    bool lossless;  // raw detokenize(tokenize(text)) == text for valid UTF-8 text
};

const Entry kVocabs[] = {
    {"models/stories260K/stories260K.gguf", true},       // SPM, byte fallback
    {"models/austen-7m/austen-7m-f32.gguf", true},       // BPE, llama3
    {"tests/data/tokenizer/ggml-vocab-gpt-2.gguf", true},
    {"tests/data/tokenizer/ggml-vocab-deepseek-llm.gguf", true},
    {"tests/data/tokenizer/ggml-vocab-falcon.gguf", false},  // lacks some byte tokens: llama.cpp drops those bytes
    {"tests/data/tokenizer/ggml-vocab-phi-3.gguf", false},  // rstrip rules eat spaces
    {"tests/data/tokenizer/ggml-vocab-bert-bge.gguf", false},  // lowercases
    {nullptr, false},  // a small Unigram vocab built here (no T5 file is bundled)
};
constexpr size_t kCount = sizeof(kVocabs) / sizeof(kVocabs[0]);

// Printable ASCII, "▁" + each letter and a few pairs, user-defined "<u>".
cria::vocab::VocabSpec unigram_spec() {
    cria::vocab::VocabSpec s;
    s.model = "t5";
    s.tokens = {"<pad>", "</s>", "<unk>", "\xe2\x96\x81", "<u>"};
    s.types = {3, 3, 2, 1, 4};
    s.scores = {0, 0, 0, -2, 0};
    for (char c = '!'; c <= '~'; ++c) {
        if (c == '<') continue;  // keep "<u>" the only token starting with '<'
        s.tokens.push_back(std::string(1, c));
        s.tokens.push_back("\xe2\x96\x81" + std::string(1, c));
        s.types.insert(s.types.end(), {1, 1});
        s.scores.push_back(-3.0f - static_cast<float>(c % 7));
        s.scores.push_back(-2.5f - static_cast<float>(c % 5));
    }
    for (const char* pair : {"th", "he", "in", "er", "an"}) {
        s.tokens.push_back(pair);
        s.types.push_back(1);
        s.scores.push_back(-1.5f);
    }
    s.add_space_prefix = 1;
    s.remove_extra_whitespaces = 1;
    return s;
}

const Vocab* vocab(size_t i) {
    static std::unique_ptr<Vocab> loaded[kCount];
    if (!loaded[i] && kVocabs[i].path == nullptr) {
        loaded[i] = std::make_unique<Vocab>(Vocab::build(unigram_spec()));
    }
    if (!loaded[i]) {
        const char* root = std::getenv("CRIA_SOURCE_DIR");
        const std::string path = (root ? std::string(root) + "/" : std::string()) + kVocabs[i].path;
        loaded[i] = std::make_unique<Vocab>(Vocab::load(path));
    }
    return loaded[i].get();
}

// Strict UTF-8: shortest forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        uint32_t cp = 0;
        if (c < 0x80) { ++i; continue; }
        if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
        else return false;
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return false;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t which = data[0] % kCount;
    const bool add_special = data[1] & 1;
    const bool parse_special = data[1] & 2;
    const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
    const Vocab& v = *vocab(which);

    const std::vector<cria::vocab::TokenId> ids = v.tokenize(text, add_special, parse_special);
    for (auto id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= v.size()) std::abort();
    }
    cria::vocab::DetokenizeOptions raw;
    raw.clean_spaces = 0;
    raw.unparse_special = true;
    const std::string back = v.detokenize(ids, raw);
    (void)v.detokenize(ids);  // with the vocab's own cleaning: must not crash

    // Streaming gives the same text and never ends a chunk inside a character
    // that could still be completed.
    cria::vocab::StreamingDetokenizer stream(v, true);
    std::string streamed;
    for (auto id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    if (streamed != back) std::abort();

    // SentencePiece writes spaces as U+2581, so a literal U+2581 comes back as a space.
    const bool spm_space_mark = v.type() == cria::vocab::VocabType::Spm && text.find("\xe2\x96\x81") != std::string::npos;
    if (kVocabs[which].lossless && !add_special && !parse_special && valid_utf8(text) && !spm_space_mark) {
        if (back != text) std::abort();
    }
    return 0;
}
