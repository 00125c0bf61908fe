#pragma once
// The tokenizer.* metadata of a converted model, as llama.cpp's converter
// writes it (tokenizer.ggml.model/pre/tokens/token_type/merges or scores,
// special token ids, add_bos/add_eos, chat templates).

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cria/gguf/value.h"

namespace cria::convert {

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// Which of llama.cpp's pre-tokenizer names a tokenizer.json's pre_tokenizer
// section corresponds to. llama.cpp recognises tokenizers by hashing the
// tokens of a test string (get_vocab_base_pre); the name only selects the
// splitting regex in the runtime, so cria recognises the regex itself:
// "llama-bpe" (Llama 3), "qwen2", "gpt-2". Throws cria::Error naming the
// regex for anything else.
std::string detect_bpe_pre_tokenizer(const nlohmann::json& tokenizer_json);

// Reads the tokenizer files of `dir` and appends the tokenizer.* keys.
// `config` is config.json; `vocab_size` the model's embedding rows (the
// vocabulary is padded with [PADn] tokens up to it, as llama.cpp does).
void add_tokenizer_metadata(const std::filesystem::path& dir, const nlohmann::json& config, uint32_t vocab_size,
                            Metadata& out);

// The pieces of a SentencePiece tokenizer.model (a protobuf ModelProto),
// parsed without libsentencepiece: only the fields the GGUF needs.
struct SentencePieceModel {
    struct Piece {
        std::string text;
        float score = 0;
        int32_t type = 1;  // 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
    };
    std::vector<Piece> pieces;
    bool add_dummy_prefix = true;
};
SentencePieceModel parse_sentencepiece_model(const std::string& bytes, const std::string& name);

}  // namespace cria::convert
