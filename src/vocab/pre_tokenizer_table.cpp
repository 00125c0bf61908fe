// The pre-tokenizers llama.cpp knows, by tokenizer.ggml.pre name: their
// regexes (from the models' tokenizer.json, with case-insensitive groups
// spelled out) and the flags that come with them.

#include <algorithm>

#include "vocab/pre_tokenizer.h"

namespace cria::vocab {

namespace {

// Building blocks shared by several families.
const std::string kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
const std::string kLlama3 = kContractions +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2 = kContractions +
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kDeepseekV3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// llama.cpp runs GPT-4o's expression in an adapted form: "upper" letters are
// letters other than a-z, "lower" ones letters other than A-Z, marks excluded.
const std::string kUpperish = R"((?:(?=\p{L})[^a-z]))";
const std::string kLowerish = R"((?:(?=\p{L})[^A-Z]))";
const std::string kGpt4oWords = "[^\\r\\n\\p{L}\\p{N}]?" + kUpperish + "*" + kLowerish + "+" + kContractions +
    "?|[^\\r\\n\\p{L}\\p{N}]?" + kUpperish + "+" + kLowerish + "*" + kContractions +
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Where llama.cpp meets \p{Lu}, \p{Ll}, ... it matches any letter (its
// category tables only know \p{L}); these patterns keep that behaviour.
const std::string kAnyCaseWords = R"([^\r\n\p{L}\p{N}]?[\p{L}\p{M}]*[\p{L}\p{M}]+)" + kContractions +
    R"(?|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+[\p{L}\p{M}]*)" + kContractions +
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// llama.cpp's hand-written Han test (not the Unicode script).
const std::string kHan =
    R"([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{2CEB0}-\x{2EBEF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}])";

std::vector<PreTokenizerConfig> make_table() {
    std::vector<PreTokenizerConfig> t;
    auto add = [&](std::vector<std::string> names, std::vector<std::string> patterns) -> PreTokenizerConfig& {
        t.push_back(PreTokenizerConfig{std::move(names), std::move(patterns)});
        return t.back();
    };

    add({"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"});
    {
        auto& c = add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                       "jina-v5-nano"},
                      {kLlama3});
        c.ignore_merges = true;
        c.add_bos = true;
    }
    add({"dbrx", "smaug-bpe"}, {kLlama3});
    add({"jais-2"}, {kContractions +
                     R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"});
    add({"deepseek-llm"},
        {"[\r\n]",
         // The NFC-unstable letters are written as \\x{...} so no editor can normalise them away.
         "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
         "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"})
        .clean_spaces = false;
    add({"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}, {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+", kDeepseekV3Words})
        .clean_spaces = false;
    add({"spark2_5"},
        {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+",
         R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)",
         R"(\p{N})"})
        .clean_spaces = false;
    add({"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[一-龥ࠀ-一가-퟿]+", R"(\p{N})"}).clean_spaces =
        false;
    add({"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"});
    add({"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}, {R"(\p{N})", kGpt2});
    add({"command-r"}, {R"(\p{N})", kGpt2}).clean_spaces = false;
    add({"smollm"}, {R"(\p{N})", kGpt2}).clean_spaces = false;
    add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
         "modern-bert", "exaone4", "mpt", "olmo", "jais"},
        {kGpt2});
    add({"jina-v1-en", "jina-v2-code", "roberta-bpe"}, {kGpt2}).add_sep = true;
    add({"trillion", "granite-docling"}, {kGpt2}).clean_spaces = false;
    add({"stablelm2"}, {kQwen2});
    add({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"}, {kQwen2}).clean_spaces = false;
    add({"megrez"}, {kQwen2});
    add({"qwen35"}, {kContractions +
                     R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"})
        .clean_spaces = false;
    add({"poro-chat"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}).clean_spaces = false;
    add({"bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"});
    add({"chatglm-bpe", "glm4"}, {kLlama3}).no_bos_token = true;
    add({"viking"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"}).clean_spaces = false;
    {
        auto& c = add({"tekken"}, {"[^\\r\\n\\p{L}\\p{N}]?" + kUpperish + "*" + kLowerish + "+|[^\\r\\n\\p{L}\\p{N}]?" +
                                   kUpperish + "+" + kLowerish +
                                   R"(*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
        c.clean_spaces = false;
        c.ignore_merges = true;
        c.add_bos = true;
    }
    {
        auto& c = add({"chameleon"}, {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
                                      R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2});
        c.clean_spaces = false;
        c.add_bos = true;
    }
    add({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4oWords}).clean_spaces = false;
    add({"tiny_aya", "cohere2moe"}, {R"(\d{1,3}(?=(?:\d{3})*\b))", kAnyCaseWords}).clean_spaces = false;
    add({"superbpe"}, {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}).clean_spaces = false;
    add({"bailingmoe", "bailingmoe2", "llada-moe"},
        {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"})
        .clean_spaces = false;
    add({"seed-coder"}, {kContractions +
                         R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"})
        .clean_spaces = false;
    add({"grok-2"}, {kQwen2}).clean_spaces = false;
    add({"ufakzeka"}, {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"})
        .clean_spaces = false;
    add({"kimi-k2"}, {kHan + "+|[^\\r\\n\\p{L}\\p{N}]?(?:(?!" + kHan + ")\\p{L})+" + kContractions +
                      R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"})
        .clean_spaces = false;
    add({"afmoe"},
        {// digit runs cut into groups of three counted from the right
         R"(\p{N}{1,2}(?=(?:\p{N}{3})*(?!\p{N}))|\p{N}{3})",
         "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+", kDeepseekV3Words})
        .clean_spaces = false;
    add({"laguna"}, {R"([^\n]+|[\n]+)", kQwen2}).clean_spaces = false;
    add({"exaone-moe"},
        {kContractions +
         R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"});
    {
        auto& c = add({"minicpm5"}, {R"(\p{N}{1,3})", kContractions +
                                     R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
        c.ignore_merges = true;
    }
    {
        auto& c = add({"youtu"},
                      {"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
                       R"([^\r\n\p{L}\p{N}]?[\p{L}\p{M}]*[\p{L}\p{M}]+)" + kContractions +
                           R"(?|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+[\p{L}\p{M}]*)" + kContractions +
                           R"(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"});
        c.clean_spaces = false;
        c.ignore_merges = true;
    }
    return t;
}

}  // namespace

const std::vector<PreTokenizerConfig>& all_pre_tokenizers() {
    static const std::vector<PreTokenizerConfig> table = make_table();
    return table;
}

const PreTokenizerConfig* find_pre_tokenizer(std::string_view name) {
    for (const PreTokenizerConfig& config : all_pre_tokenizers()) {
        if (std::find(config.names.begin(), config.names.end(), name) != config.names.end()) return &config;
    }
    return nullptr;
}

}  // namespace cria::vocab
