// Tokenizer metadata: pre-tokenizer detection, SentencePiece models read from
// their protobuf bytes, special tokens and chat templates.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cria/convert/tokenizer_import.h"
#include "cria/core/error.h"
#include "support/test_paths.h"

namespace cria::convert {
namespace {

using nlohmann::json;

json austen_tokenizer() {
    json tj;
    std::ifstream(test::model_path("austen-7m/hf/tokenizer.json")) >> tj;
    return tj;
}

TEST(PreTokenizer, RecognisesLlama3Qwen2Gpt2) {
    json tj = austen_tokenizer();
    EXPECT_EQ(detect_bpe_pre_tokenizer(tj), "llama-bpe");
    std::string re = tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"];
    re.replace(re.find("\\p{N}{1,3}"), 10, "\\p{N}");
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = re;
    EXPECT_EQ(detect_bpe_pre_tokenizer(tj), "qwen2");
    // GPT-2: a lone ByteLevel pre-tokenizer that applies its built-in regex.
    tj["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    EXPECT_EQ(detect_bpe_pre_tokenizer(tj), "gpt-2");
    tj["pre_tokenizer"]["use_regex"] = false;
    EXPECT_THROW(detect_bpe_pre_tokenizer(tj), Error);
    tj["pre_tokenizer"] = {{"type", "Whitespace"}};
    EXPECT_THROW(detect_bpe_pre_tokenizer(tj), Error);
}

// --- SentencePiece protobuf, written by hand ---------------------------------
void varint(std::string& s, uint64_t v) {
    while (v >= 0x80) {
        s += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    s += static_cast<char>(v);
}
void field_bytes(std::string& s, uint32_t field, const std::string& b) {
    varint(s, field << 3 | 2);
    varint(s, b.size());
    s += b;
}
std::string piece(const std::string& text, float score, int type) {
    std::string p;
    field_bytes(p, 1, text);
    varint(p, 2 << 3 | 5);
    char f[4];
    std::memcpy(f, &score, 4);
    p.append(f, 4);
    varint(p, 3 << 3 | 0);
    varint(p, static_cast<uint64_t>(type));
    return p;
}
std::string spm_model(bool dummy_prefix) {
    std::string m;
    field_bytes(m, 1, piece("<unk>", 0, 2));
    field_bytes(m, 1, piece("<s>", 0, 3));
    field_bytes(m, 1, piece("</s>", 0, 3));
    field_bytes(m, 1, piece("<0x41>", 0, 6));
    field_bytes(m, 1, piece("\xe2\x96\x81the", -1.5f, 1));
    std::string trainer;  // an unrelated message (field 2) must be skipped
    field_bytes(trainer, 1, "input.txt");
    field_bytes(m, 2, trainer);
    std::string normalizer;
    field_bytes(normalizer, 1, "nmt_nfkc");
    varint(normalizer, 3 << 3 | 0);
    varint(normalizer, dummy_prefix ? 1 : 0);
    field_bytes(m, 3, normalizer);
    return m;
}

TEST(SentencePiece, ParsesPiecesScoresTypes) {
    const SentencePieceModel m = parse_sentencepiece_model(spm_model(false), "t");
    ASSERT_EQ(m.pieces.size(), 5u);
    EXPECT_EQ(m.pieces[4].text, "\xe2\x96\x81the");
    EXPECT_EQ(m.pieces[4].score, -1.5f);
    EXPECT_EQ(m.pieces[0].type, 2);
    EXPECT_EQ(m.pieces[3].type, 6);
    EXPECT_FALSE(m.add_dummy_prefix);
    EXPECT_TRUE(parse_sentencepiece_model(spm_model(true), "t").add_dummy_prefix);
}

TEST(SentencePiece, MalformedModels) {
    const std::string good = spm_model(true);
    EXPECT_THROW(parse_sentencepiece_model(good.substr(0, good.size() / 2), "t"), Error);  // cut
    EXPECT_THROW(parse_sentencepiece_model("", "t"), Error);                                // no pieces
    EXPECT_THROW(parse_sentencepiece_model(std::string(12, '\xff'), "t"), Error);          // endless varint
    std::string bad_type;
    field_bytes(bad_type, 1, piece("x", 0, 9));
    EXPECT_THROW(parse_sentencepiece_model(bad_type, "t"), Error);
    std::string group;
    varint(group, 1 << 3 | 3);  // wire type 3 (groups) is not supported
    EXPECT_THROW(parse_sentencepiece_model(group, "t"), Error);
}

TEST(SentencePiece, MetadataWithPaddingAndSpecials) {
    const auto dir = test::temp_dir() / "spm";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "tokenizer.model", std::ios::binary) << spm_model(true);
    std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<s>", "eos_token": {"content": "</s>"},
        "add_bos_token": true, "add_eos_token": false,
        "added_tokens_decoder": {"1": {"content": "<s>", "special": true}, "2": {"content": "</s>", "special": true}},
        "chat_template": [{"name": "default", "template": "A"}, {"name": "tool_use", "template": "B"}]})";
    Metadata md;
    add_tokenizer_metadata(dir, json{{"unk_token_id", 0}}, 7, md);
    std::map<std::string, gguf::Value> m(md.begin(), md.end());
    EXPECT_EQ(*m.at("tokenizer.ggml.model").as_string(), "llama");
    const auto* tokens = m.at("tokenizer.ggml.tokens").as_string_array();
    ASSERT_EQ(tokens->size(), 7u);
    EXPECT_EQ((*tokens)[6], "[PAD6]");
    EXPECT_EQ(m.at("tokenizer.ggml.token_type").as_i32_array()[6], 5);
    EXPECT_EQ(m.at("tokenizer.ggml.scores").as_f32_array()[4], -1.5f);
    EXPECT_EQ(m.at("tokenizer.ggml.bos_token_id").as_u64(), 1u);
    EXPECT_EQ(m.at("tokenizer.ggml.eos_token_id").as_u64(), 2u);
    EXPECT_EQ(m.at("tokenizer.ggml.unknown_token_id").as_u64(), 0u);
    EXPECT_EQ(m.at("tokenizer.ggml.add_bos_token").as_bool(), true);
    EXPECT_EQ(*m.at("tokenizer.chat_template").as_string(), "A");
    EXPECT_EQ(*m.at("tokenizer.chat_template.tool_use").as_string(), "B");
    EXPECT_FALSE(m.count("tokenizer.ggml.add_space_prefix"));
}

TEST(TokenizerImport, AustenBpeSpecials) {
    Metadata md;
    add_tokenizer_metadata(test::model_path("austen-7m/hf"), json{{"bos_token_id", 4093}}, 4096, md);
    std::vector<std::string> keys;
    for (const auto& [k, v] : md) keys.push_back(k);
    // gguf-py's order: ids found in tokenizer_config.json, then config.json's.
    const std::vector<std::string> want = {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                                           "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
                                           "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
                                           "tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token",
                                           "tokenizer.ggml.add_eos_token", "tokenizer.chat_template"};
    EXPECT_EQ(keys, want);
    EXPECT_EQ(md[3].second.as_i32_array()[4094], 3);  // <|im_start|> is a control token
    EXPECT_EQ(md[3].second.as_i32_array()[100], 1);
}

}  // namespace
}  // namespace cria::convert
