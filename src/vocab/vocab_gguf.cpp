// Reading a vocabulary from GGUF metadata (tokenizer.* keys).

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/gguf/value.h"
#include "cria/vocab/vocab.h"

namespace cria::vocab {

namespace {

const gguf::Value* find_array(const gguf::File& file, std::string_view key, gguf::ValueType element) {
    const gguf::Value* value = file.find(key);
    if (value == nullptr) return nullptr;
    if (!value->is_array() || value->array_type() != element) {
        throw Error("invalid type for " + std::string(key) + ": expected an array of " +
                    std::string(gguf::value_type_name(element)));
    }
    return value;
}

TokenId optional_id(const gguf::File& file, std::string_view key) {
    const gguf::Value* value = file.find(key);
    if (value == nullptr) return kNoToken;
    const auto n = value->as_u64();
    if (!n) throw Error("invalid type for " + std::string(key) + ": expected an integer");
    return *n > static_cast<uint64_t>(INT32_MAX) ? kNoToken : static_cast<TokenId>(*n);
}

int optional_flag(const gguf::File& file, std::string_view key) {
    const auto b = file.get_bool(key);
    return b ? (*b ? 1 : 0) : -1;
}

}  // namespace

Vocab Vocab::from_gguf(const gguf::File& file) {
    VocabSpec spec;
    const auto model = file.get_string("tokenizer.ggml.model");
    if (!model) throw Error("the model has no tokenizer (tokenizer.ggml.model is missing)");
    spec.model = *model;
    spec.pre = file.get_string("tokenizer.ggml.pre", "");
    spec.model_name = file.get_string("general.name", "");

    if (spec.model != "none" && spec.model != "no_vocab") {
        const gguf::Value* tokens = find_array(file, "tokenizer.ggml.tokens", gguf::ValueType::STRING);
        if (tokens == nullptr) throw Error("cannot find the vocabulary (tokenizer.ggml.tokens)");
        spec.tokens = *tokens->as_string_array();

        if (const gguf::Value* scores = file.find("tokenizer.ggml.scores")) {
            if (!scores->is_array()) throw Error("invalid type for tokenizer.ggml.scores");
            if (scores->array_type() == gguf::ValueType::F32) {
                const auto s = scores->as_f32_array();
                spec.scores.assign(s.begin(), s.end());
            } else if (scores->array_type() == gguf::ValueType::I32) {
                for (int32_t x : scores->as_i32_array()) spec.scores.push_back(static_cast<float>(x));
            } else {
                throw Error("invalid type for tokenizer.ggml.scores: expected f32 or i32 array");
            }
        }
        if (const gguf::Value* types = find_array(file, "tokenizer.ggml.token_type", gguf::ValueType::I32)) {
            const auto t = types->as_i32_array();
            spec.types.assign(t.begin(), t.end());
        }
        if (const gguf::Value* merges = find_array(file, "tokenizer.ggml.merges", gguf::ValueType::STRING)) {
            spec.merges = *merges->as_string_array();
        } else if (spec.model == "gpt2") {
            throw Error("cannot find the BPE merges (tokenizer.ggml.merges)");
        }
        if (const gguf::Value* map = file.find("tokenizer.ggml.precompiled_charsmap")) {
            if (!map->is_array()) throw Error("invalid type for tokenizer.ggml.precompiled_charsmap");
            if (map->array_type() == gguf::ValueType::U8) {
                const auto b = map->as_u8_array();
                spec.precompiled_charsmap.assign(b.begin(), b.end());
            } else if (map->array_type() == gguf::ValueType::I8) {
                for (int8_t x : map->as_i8_array()) spec.precompiled_charsmap.push_back(static_cast<uint8_t>(x));
            } else {
                throw Error("invalid type for tokenizer.ggml.precompiled_charsmap: expected u8 or i8 array");
            }
        }
    }

    spec.bos = optional_id(file, "tokenizer.ggml.bos_token_id");
    spec.eos = optional_id(file, "tokenizer.ggml.eos_token_id");
    spec.eot = optional_id(file, "tokenizer.ggml.eot_token_id");
    spec.eom = optional_id(file, "tokenizer.ggml.eom_token_id");
    spec.unk = optional_id(file, "tokenizer.ggml.unknown_token_id");
    spec.sep = optional_id(file, "tokenizer.ggml.seperator_token_id");  // sic: the key is spelled so
    spec.pad = optional_id(file, "tokenizer.ggml.padding_token_id");
    spec.mask = optional_id(file, "tokenizer.ggml.mask_token_id");
    spec.add_bos = optional_flag(file, "tokenizer.ggml.add_bos_token");
    spec.add_eos = optional_flag(file, "tokenizer.ggml.add_eos_token");
    spec.add_sep = optional_flag(file, "tokenizer.ggml.add_sep_token");
    spec.add_space_prefix = optional_flag(file, "tokenizer.ggml.add_space_prefix");
    spec.remove_extra_whitespaces = optional_flag(file, "tokenizer.ggml.remove_extra_whitespaces");
    spec.normalizer_lowercase = optional_flag(file, "tokenizer.ggml.normalizer.lowercase");
    spec.normalizer_strip_accents = optional_flag(file, "tokenizer.ggml.normalizer.strip_accents");
    return build(std::move(spec));
}

Vocab Vocab::load(const std::string& path) {
    const auto file = gguf::File::open(path);
    return from_gguf(*file);
}

}  // namespace cria::vocab
