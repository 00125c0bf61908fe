#include "cria/convert/tokenizer_import.h"

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cria/core/error.h"

namespace cria::convert {
namespace {

namespace fs = std::filesystem;
using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

// GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE / gguf-py TokenType).
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

// The splitting regexes behind llama.cpp's pre-tokenizer names, exactly as
// they appear in the tokenizer.json of the models llama.cpp names that way.
const std::map<std::string, std::string>& known_pre_regexes() {
    static const std::map<std::string, std::string> table = {
        {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
         "llama-bpe"},
        {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
         "qwen2"},
        {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "gpt-2"},
        // OpenAI's o200k expression (gpt-oss).
        {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
         R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
         R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
         "gpt-4o"},
    };
    return table;
}

json read_json(const fs::path& path, bool required) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (required) throw Error("convert: cannot open '" + path.string() + "'");
        return json();
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error("convert: '" + path.string() + "' is not a valid JSON object");
    return j;
}

// tokenizer_config's "eos_token" may be a string or {"content": ...}.
std::optional<std::string> token_content(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
}

// gguf-py's does_token_look_special: names like <|endoftext|> are control tokens.
bool looks_special(const std::string& t) {
    if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
    auto wrapped = [&](std::string_view open, std::string_view close) {
        return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
               t.compare(t.size() - close.size(), close.size(), close) == 0;
    };
    return wrapped("<|", "|>") || wrapped("<｜", "｜>") || wrapped("<｜", "｜>");
}

struct AddedToken {
    std::string content;
    bool special = false;
};

// Special token ids, bos/eos flags and chat templates (gguf-py SpecialVocab).
void add_special_vocab(const fs::path& dir, const json& config, const std::map<int64_t, AddedToken>& added,
                       uint32_t vocab_size, Metadata& out) {
    const json tok_config = read_json(dir / "tokenizer_config.json", false);
    const json gen_config = read_json(dir / "generation_config.json", false);
    static const std::pair<const char*, const char*> kTypes[] = {
        {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
        {"pad", "padding_token_id"}, {"cls", "cls_token_id"}, {"mask", "mask_token_id"}};
    std::vector<std::pair<std::string, uint32_t>> ids;  // in the order found, as gguf-py writes them
    auto have = [&](const std::string& key) {
        for (const auto& [k, v] : ids)
            if (k == key) return true;
        return false;
    };
    auto set = [&](const std::string& key, const json& v) {
        if (have(key) || !v.is_number_integer()) return;
        const int64_t id = v.get<int64_t>();
        if (id >= 0 && id < vocab_size) ids.emplace_back(key, static_cast<uint32_t>(id));
    };
    // 1. tokenizer_config.json names the tokens by content.
    if (tok_config.is_object()) {
        for (const auto& [typ, key] : kTypes) {
            const auto it = tok_config.find(std::string(typ) + "_token");
            if (it == tok_config.end()) continue;
            const auto content = token_content(*it);
            if (!content) continue;
            for (const auto& [id, tok] : added)
                if (tok.content == *content) {
                    set(key, id);
                    break;
                }
        }
    }
    // 2. config.json, then generation_config.json, give ids directly.
    for (const json* source : {&config, &gen_config}) {
        if (!source->is_object()) continue;
        for (const auto& [typ, key] : kTypes) {
            const auto it = source->find(std::string(typ) + "_token_id");
            if (it != source->end()) set(key, *it);
        }
    }
    for (const auto& [key, id] : ids) out.emplace_back("tokenizer.ggml." + key, Value::u32(id));
    if (tok_config.is_object()) {
        for (const char* typ : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) {
            const auto it = tok_config.find(std::string("add_") + typ + "_token");
            if (it != tok_config.end() && it->is_boolean())
                out.emplace_back(std::string("tokenizer.ggml.add_") + typ + "_token", Value::boolean(it->get<bool>()));
        }
    }
    // Chat template: a string, a list of named templates, or chat_template.jinja.
    std::ifstream jinja(dir / "chat_template.jinja", std::ios::binary);
    if (jinja) {
        out.emplace_back("tokenizer.chat_template",
                         Value::string(std::string((std::istreambuf_iterator<char>(jinja)), std::istreambuf_iterator<char>())));
    } else if (tok_config.is_object() && tok_config.contains("chat_template")) {
        const json& t = tok_config["chat_template"];
        if (t.is_string()) {
            out.emplace_back("tokenizer.chat_template", Value::string(t.get<std::string>()));
        } else if (t.is_array()) {
            std::vector<std::string> names;
            for (const json& e : t) {
                if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
                    !e["template"].is_string())
                    throw Error("convert: tokenizer_config.json chat_template list entries need a name and a template");
                const std::string name = e["name"].get<std::string>();
                const std::string key = name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
                out.emplace_back(key, Value::string(e["template"].get<std::string>()));
                if (name != "default") names.push_back(name);
            }
            if (!names.empty())
                out.emplace_back("tokenizer.chat_templates", Value::array(ValueType::STRING, std::move(names)));
        }
    }
}

void add_bpe(const fs::path& dir, const json& tj, const json& config, uint32_t vocab_size, Metadata& out) {
    const json& model = tj["model"];
    if (!model.contains("vocab") || !model["vocab"].is_object())
        throw Error("convert: tokenizer.json has no model.vocab object");
    std::map<int64_t, std::string> by_id;
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
        if (!it.value().is_number_integer()) throw Error("convert: tokenizer.json vocab id of '" + it.key() + "' is not an integer");
        by_id[it.value().get<int64_t>()] = it.key();
    }
    std::map<int64_t, AddedToken> added;
    if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
        for (const json& a : tj["added_tokens"]) {
            if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
                !a["content"].is_string())
                throw Error("convert: tokenizer.json added_tokens entries need an integer id and a content string");
            AddedToken t{a["content"].get<std::string>(), a.value("special", false)};
            by_id[a["id"].get<int64_t>()] = t.content;
            added[a["id"].get<int64_t>()] = t;
        }
    }
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    tokens.reserve(vocab_size);
    for (uint32_t i = 0; i < vocab_size; ++i) {
        auto it = by_id.find(i);
        if (it == by_id.end()) {
            tokens.push_back("[PAD" + std::to_string(i) + "]");
            types.push_back(kUnused);
            continue;
        }
        tokens.push_back(it->second);
        auto a = added.find(i);
        if (a == added.end()) types.push_back(kNormal);
        else types.push_back(a->second.special || looks_special(a->second.content) ? kControl : kUserDefined);
    }
    std::vector<std::string> merges;
    if (model.contains("merges") && model["merges"].is_array()) {
        for (const json& m : model["merges"]) {
            if (m.is_string()) merges.push_back(m.get<std::string>());
            else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
                merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
            else throw Error("convert: tokenizer.json has a merge that is neither \"a b\" nor [\"a\", \"b\"]");
        }
    }
    out.emplace_back("tokenizer.ggml.model", Value::string("gpt2"));
    out.emplace_back("tokenizer.ggml.pre", Value::string(detect_bpe_pre_tokenizer(tj)));
    out.emplace_back("tokenizer.ggml.tokens", Value::array(ValueType::STRING, std::move(tokens)));
    out.emplace_back("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
    out.emplace_back("tokenizer.ggml.merges", Value::array(ValueType::STRING, std::move(merges)));
    add_special_vocab(dir, config, added, vocab_size, out);
}

void add_spm(const fs::path& dir, const json& config, uint32_t vocab_size, Metadata& out) {
    const fs::path path = dir / "tokenizer.model";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("convert: cannot open '" + path.string() + "'");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const SentencePieceModel spm = parse_sentencepiece_model(bytes, path.string());
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (uint32_t i = 0; i < vocab_size; ++i) {
        if (i < spm.pieces.size()) {
            tokens.push_back(spm.pieces[i].text);
            scores.push_back(spm.pieces[i].score);
            types.push_back(spm.pieces[i].type);
        } else {
            tokens.push_back("[PAD" + std::to_string(i) + "]");
            scores.push_back(-1000.0f);
            types.push_back(kUnused);
        }
    }
    // tokenizer_config's added_tokens_decoder overrides pieces (as llama.cpp does).
    std::map<int64_t, AddedToken> added;
    const json tok_config = read_json(dir / "tokenizer_config.json", false);
    if (tok_config.is_object() && tok_config.contains("added_tokens_decoder") && tok_config["added_tokens_decoder"].is_object()) {
        for (auto it = tok_config["added_tokens_decoder"].begin(); it != tok_config["added_tokens_decoder"].end(); ++it) {
            int64_t id = -1;
            try {
                id = std::stoll(it.key());
            } catch (const std::exception&) {
                throw Error("convert: tokenizer_config.json added_tokens_decoder key '" + it.key() + "' is not an id");
            }
            const auto content = token_content(it.value());
            if (!content || id < 0 || id >= vocab_size) continue;
            AddedToken t{*content, it.value().is_object() && it.value().value("special", false)};
            tokens[static_cast<size_t>(id)] = t.content;
            scores[static_cast<size_t>(id)] = -1000.0f;
            types[static_cast<size_t>(id)] = t.special ? kControl : kUserDefined;
            added[id] = t;
        }
    }
    for (size_t i = 0; i < spm.pieces.size() && i < vocab_size; ++i)
        if (!added.count(static_cast<int64_t>(i))) added[static_cast<int64_t>(i)] = {spm.pieces[i].text, false};
    out.emplace_back("tokenizer.ggml.model", Value::string("llama"));
    out.emplace_back("tokenizer.ggml.pre", Value::string("default"));
    out.emplace_back("tokenizer.ggml.tokens", Value::array(ValueType::STRING, std::move(tokens)));
    out.emplace_back("tokenizer.ggml.scores", Value::array(ValueType::F32, std::move(scores)));
    out.emplace_back("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
    if (!spm.add_dummy_prefix) out.emplace_back("tokenizer.ggml.add_space_prefix", Value::boolean(false));
    add_special_vocab(dir, config, added, vocab_size, out);
}

}  // namespace

std::string detect_bpe_pre_tokenizer(const json& tj) {
    if (tj.contains("normalizer") && !tj["normalizer"].is_null())
        throw Error("convert: byte-level BPE tokenizers with a normalizer are not supported (llama-bpe, qwen2 and gpt-2 have none)");
    const json& pre = tj.contains("pre_tokenizer") ? tj["pre_tokenizer"] : json();
    std::vector<const json*> steps;
    if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array())
        for (const json& s : pre["pretokenizers"]) steps.push_back(&s);
    else if (pre.is_object())
        steps.push_back(&pre);
    std::string regex;
    bool byte_level = false;
    for (const json* s : steps) {
        if (!s->is_object()) continue;
        const std::string type = s->value("type", "");
        if (type == "Split" && s->contains("pattern") && (*s)["pattern"].is_object() &&
            (*s)["pattern"].contains("Regex") && (*s)["pattern"]["Regex"].is_string()) {
            if (!regex.empty()) throw Error("convert: tokenizer.json splits with more than one regex; not a known pre-tokenizer");
            regex = (*s)["pattern"]["Regex"].get<std::string>();
        } else if (type == "ByteLevel") {
            byte_level = true;
            // ByteLevel with use_regex applies GPT-2's own split regex.
            if (s->value("use_regex", true) && regex.empty())
                regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
        }
    }
    if (!byte_level) throw Error("convert: tokenizer.json has no ByteLevel pre-tokenizer; only byte-level BPE is supported");
    const auto& table = known_pre_regexes();
    auto it = table.find(regex);
    if (it == table.end())
        throw Error("convert: unknown BPE pre-tokenizer (split regex " + regex +
                    "); known: llama-bpe (Llama 3), qwen2, gpt-2, gpt-4o");
    return it->second;
}

void add_tokenizer_metadata(const fs::path& dir, const json& config, uint32_t vocab_size, Metadata& out) {
    const fs::path tj_path = dir / "tokenizer.json";
    if (fs::exists(tj_path)) {
        const json tj = read_json(tj_path, true);
        const std::string type = tj.contains("model") && tj["model"].is_object() ? tj["model"].value("type", "") : "";
        if (type == "BPE" && !tj["model"].value("byte_fallback", false)) {
            add_bpe(dir, tj, config, vocab_size, out);
            return;
        }
        // SentencePiece models exported to tokenizer.json (BPE with byte
        // fallback, Unigram) are converted from their tokenizer.model.
        if (!fs::exists(dir / "tokenizer.model"))
            throw Error("convert: tokenizer.json model type '" + type +
                        "' is not byte-level BPE and there is no tokenizer.model to read instead");
    }
    if (fs::exists(dir / "tokenizer.model")) {
        add_spm(dir, config, vocab_size, out);
        return;
    }
    throw Error("convert: '" + dir.string() + "' has neither tokenizer.json nor tokenizer.model");
}

}  // namespace cria::convert
