// Building a vocabulary from its spec: model-type defaults, token attributes,
// special tokens, the end-of-generation set and the piece cache, following
// llama.cpp's llama_vocab::load step by step.

#include <algorithm>
#include <cctype>

#include "cria/core/error.h"
#include "vocab/bpe_merges.h"
#include "vocab/byte_encoding.h"
#include "vocab/ugm_tokenizer.h"
#include "vocab/vocab_impl.h"

namespace cria::vocab {

Vocab::Impl::Impl() = default;
Vocab::Impl::~Impl() = default;

TokenId Vocab::Impl::spm_byte_token(uint8_t byte) const {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const char name[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
    const TokenId id = find(std::string_view(name, 6));
    if (id != kNoToken) return id;
    const char raw = static_cast<char>(byte);
    const TokenId plain = find(std::string_view(&raw, 1));
    return plain != kNoToken ? plain : unk;  // llama.cpp would abort here
}

namespace {

uint32_t attr_of_type(int32_t type) {
    switch (static_cast<TokenType>(type)) {
        case TokenType::Normal: return attr::kNormal;
        case TokenType::Unknown: return attr::kUnknown;
        case TokenType::Control: return attr::kControl;
        case TokenType::UserDefined: return attr::kUserDefined;
        case TokenType::Unused: return attr::kUnused;
        case TokenType::Byte: return attr::kByte;
        default: return attr::kUndefined;
    }
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

void set_model_defaults(Vocab::Impl& v, const VocabSpec& spec) {
    const std::string& m = spec.model;
    if (m == "none" || m == "no_vocab") {
        v.type = VocabType::None;
        return;
    }
    if (m == "llama") {
        v.type = VocabType::Spm;
        v.bos = 1, v.eos = 2, v.unk = 0;
        v.add_space_prefix = true;
        v.add_bos = true;
    } else if (m == "bert") {
        v.type = VocabType::Wpm;
        v.bos = 101, v.unk = 100, v.sep = 102, v.pad = 0, v.mask = 103;
        v.add_bos = true;
        v.add_sep = true;
        v.clean_spaces = true;
    } else if (m == "gpt2") {
        v.type = VocabType::Bpe;
        v.bos = 11, v.eos = 11;
        v.add_space_prefix = false;
        v.escape_whitespaces = false;
        const std::string pre = spec.pre.empty() ? "default" : spec.pre;
        if (spec.pre.empty()) {
            // llama.cpp does the same, with the same warning: old conversions lack the key.
            v.warnings.push_back("no pre-tokenizer type (tokenizer.ggml.pre) in the file; using 'default'. "
                                 "Tokenization may differ from the original model: consider reconverting it");
        }
        const PreTokenizerConfig* config = find_pre_tokenizer(pre);
        if (config == nullptr) {
            throw Error("unknown or unsupported pre-tokenizer '" + pre +
                        "' (tokenizer.ggml.pre); cria cannot tokenize for this model");
        }
        v.pre = pre;
        v.clean_spaces = config->clean_spaces;
        v.ignore_merges = config->ignore_merges;
        v.add_bos = config->add_bos;
        v.add_sep = config->add_sep;
        if (config->no_bos_token) v.bos = kNoToken;
        v.pre_tokenizer = std::make_unique<PreTokenizer>(config->patterns);
    } else if (m == "t5") {
        v.type = VocabType::Ugm;
        v.eos = 1, v.unk = 2, v.pad = 0;
        v.add_eos = true;  // add_space_prefix stays off unless the metadata turns it on
    } else {
        throw Error("unknown or unsupported tokenizer model '" + m + "' (tokenizer.ggml.model)");
    }
}

// DeepSeek's "<｜end▁of▁sentence｜>" (full-width bars, U+2581 spaces).
constexpr const char* kDeepseekEnd = "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";

void detect_special_tokens(Vocab::Impl& v) {
    // Token texts that mean "end of turn" and friends, as llama.cpp guesses them.
    static const char* const kEot[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                       "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                       kDeepseekEnd,
                                       "<end_of_utterance>"};
    static const char* const kEog[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                                       "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                                       "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                                       "<turn|>", "<|tool_response>",
                                       kDeepseekEnd, "[e~["};
    auto make_control = [&](TokenId id) { v.tokens[static_cast<size_t>(id)].attr |= attr::kControl; };
    // Walk ids in order so the choice among several candidates is deterministic.
    for (TokenId id = 0; id < static_cast<TokenId>(v.tokens.size()); ++id) {
        const std::string& text = v.tokens[static_cast<size_t>(id)].text;
        if (v.eot == kNoToken && std::find(std::begin(kEot), std::end(kEot), text) != std::end(kEot)) {
            v.eot = id;
            make_control(id);
        }
        if (v.eom == kNoToken && text == "<|eom_id|>") {
            v.eom = id;
            make_control(id);
        }
    }
    for (TokenData& t : v.tokens) {
        if ((t.attr & attr::kControl) && contains(t.text, "unused")) t.attr |= attr::kUnused;
    }
    for (TokenId id = 0; id < static_cast<TokenId>(v.tokens.size()); ++id) {
        const std::string& text = v.tokens[static_cast<size_t>(id)].text;
        if (std::find(std::begin(kEog), std::end(kEog), text) != std::end(kEog)) {
            v.eog.insert(id);
            make_control(id);
        }
        if (text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>") {
            v.tokens[static_cast<size_t>(id)].attr = attr::kUserDefined;  // gpt-oss renders these
        }
    }
    for (TokenId id : {v.eos, v.eot, v.eom}) {
        if (id != kNoToken) v.eog.insert(id);
    }
    // o200k_harmony / solar-open: "<|end|>" is not the end of generation there.
    auto eog_text = [&](std::string_view s) {
        for (TokenId id : v.eog) {
            if (v.tokens[static_cast<size_t>(id)].text == s) return id;
        }
        return kNoToken;
    };
    const TokenId end = eog_text("<|end|>");
    if (end != kNoToken && ((eog_text("<|return|>") != kNoToken && eog_text("<|call|>") != kNoToken) ||
                            (eog_text("<|calls|>") != kNoToken && eog_text("<|flush|>") != kNoToken))) {
        v.eog.erase(end);
        v.tokens[static_cast<size_t>(end)].attr = attr::kUserDefined;
    }
    const TokenId s_end = eog_text("</s>");
    if (s_end != kNoToken && eog_text("<|tool_response>") != kNoToken) {
        v.eog.erase(s_end);
        v.tokens[static_cast<size_t>(s_end)].attr = attr::kNormal;
    }
}

void apply_model_token_rules(Vocab::Impl& v, const VocabSpec& spec) {
    std::string name = spec.model_name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    auto set = [&](std::string_view text, uint32_t bit, bool on) {
        const TokenId id = v.find(text);
        if (id == kNoToken) return;
        uint32_t& a = v.tokens[static_cast<size_t>(id)].attr;
        a = on ? (a | bit) : (a & ~bit);
    };
    if (contains(spec.pre, "jina-v2-de") || contains(spec.pre, "jina-v2-es") || contains(spec.pre, "jina-v2-code")) {
        set("<mask>", attr::kLStrip, true);
    } else if (contains(name, "phi-3") || contains(name, "phi3")) {
        for (TokenId id : v.special_tokens) v.tokens[static_cast<size_t>(id)].attr |= attr::kRStrip;
        set("</s>", attr::kRStrip, true);
        for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, attr::kRStrip, false);
    } else if (contains(name, "modern-bert")) {
        set("[MASK]", attr::kLStrip, true);
    }
}

}  // namespace

Vocab::Vocab(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Vocab::Vocab(Vocab&&) noexcept = default;
Vocab& Vocab::operator=(Vocab&&) noexcept = default;
Vocab::~Vocab() = default;

Vocab Vocab::build(VocabSpec spec) {
    auto v = std::make_unique<Impl>();
    v->model = spec.model;
    set_model_defaults(*v, spec);

    const size_t n = spec.tokens.size();
    if (v->type != VocabType::None && n == 0) throw Error("vocabulary has no tokens (tokenizer.ggml.tokens)");
    if (!spec.scores.empty() && spec.scores.size() < n)
        throw Error("tokenizer.ggml.scores has fewer entries than there are tokens");
    if (!spec.types.empty() && spec.types.size() < n)
        throw Error("tokenizer.ggml.token_type has fewer entries than there are tokens");
    if (n > static_cast<size_t>(INT32_MAX)) throw Error("vocabulary too large");

    v->tokens.resize(n);
    for (size_t i = 0; i < n; ++i) {
        TokenData& t = v->tokens[i];
        t.text = std::move(spec.tokens[i]);
        if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";
        t.score = spec.scores.empty() ? 0.0f : spec.scores[i];
        t.attr = spec.types.empty() ? attr::kNormal : attr_of_type(spec.types[i]);
        v->max_token_length = std::max(v->max_token_length, t.text.size());
    }
    v->by_text.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const auto [it, inserted] = v->by_text.emplace(v->tokens[i].text, static_cast<TokenId>(i));
        if (!inserted) {
            throw Error("duplicate token in vocabulary: '" + v->tokens[i].text + "' has ids " +
                        std::to_string(it->second) + " and " + std::to_string(i));
        }
    }

    if (spec.add_space_prefix >= 0) v->add_space_prefix = spec.add_space_prefix != 0;
    if (spec.remove_extra_whitespaces >= 0) v->remove_extra_whitespaces = spec.remove_extra_whitespaces != 0;

    if (v->type == VocabType::Bpe) {
        auto find = [&](const std::string& s) { return v->find(s); };
        v->merges = std::make_unique<BpeMerges>(spec.merges, find);
        for (int b = 0; b < 256; ++b)
            v->merges->set_byte_piece(static_cast<uint8_t>(b), byte_encoding::byte_to_text(static_cast<uint8_t>(b)), find);
    }

    // Special token ids from metadata; defaults that fall outside the vocab are dropped.
    auto pick = [&](TokenId& id, TokenId from_spec) {
        if (id >= static_cast<TokenId>(n)) id = kNoToken;
        if (from_spec >= 0 && from_spec < static_cast<TokenId>(n)) id = from_spec;
    };
    pick(v->bos, spec.bos);
    pick(v->eos, spec.eos);
    pick(v->eot, spec.eot);
    pick(v->eom, spec.eom);
    pick(v->unk, spec.unk);
    pick(v->sep, spec.sep);
    pick(v->pad, spec.pad);
    pick(v->mask, spec.mask);
    if (spec.add_bos >= 0) v->add_bos = spec.add_bos != 0;
    if (spec.add_eos >= 0) v->add_eos = spec.add_eos != 0;
    if (spec.add_sep >= 0) v->add_sep = spec.add_sep != 0;
    if (v->add_bos && v->bos == kNoToken) throw Error("tokenizer.ggml.add_bos_token is true, but there is no BOS token");
    if (v->add_eos && v->eos == kNoToken) throw Error("tokenizer.ggml.add_eos_token is true, but there is no EOS token");
    if (v->add_sep && v->sep == kNoToken) throw Error("tokenizer.ggml.add_sep_token is true, but there is no SEP token");

    // BertNormalizer options: lowercasing is on unless the model says otherwise,
    // and accents are stripped when lowercasing unless said otherwise.
    v->lowercase = spec.normalizer_lowercase >= 0 ? spec.normalizer_lowercase != 0 : true;
    v->strip_accents = spec.normalizer_strip_accents >= 0 ? spec.normalizer_strip_accents != 0 : v->lowercase;

    if (v->type != VocabType::None) detect_special_tokens(*v);

    for (TokenId id = 0; id < static_cast<TokenId>(n); ++id) {
        if (v->has(attr::kControl | attr::kUserDefined | attr::kUnknown, id)) v->special_tokens.push_back(id);
    }
    std::stable_sort(v->special_tokens.begin(), v->special_tokens.end(), [&](TokenId a, TokenId b) {
        return v->tokens[static_cast<size_t>(a)].text.size() > v->tokens[static_cast<size_t>(b)].text.size();
    });
    apply_model_token_rules(*v, spec);

    if (v->type == VocabType::Spm) {
        for (int c = 0; c < 128; ++c) v->spm_isolated[static_cast<size_t>(c)] = true;
        for (const TokenData& t : v->tokens) {
            if (t.text.size() < 2) continue;
            for (char c : t.text) v->spm_isolated[static_cast<unsigned char>(c)] = false;
        }
    }
    if (v->type == VocabType::Ugm) v->ugm = std::make_unique<UgmModel>(*v, spec.precompiled_charsmap);

    Vocab vocab(std::move(v));
    Impl& impl = *vocab.impl_;
    std::vector<std::string> pieces(n);
    for (TokenId id = 0; id < static_cast<TokenId>(n); ++id) pieces[static_cast<size_t>(id)] = vocab.token_to_piece(id, true);
    impl.pieces = std::move(pieces);
    if (impl.type == VocabType::Spm) {
        impl.newline = impl.spm_byte_token('\n');
    } else if (impl.type == VocabType::Wpm) {
        impl.newline = impl.pad;
    } else if (impl.type != VocabType::None) {
        const std::vector<TokenId> ids = vocab.tokenize("\n", false, false);
        impl.newline = ids.empty() ? impl.pad : ids[0];
    }
    return vocab;
}

std::vector<std::string> known_pre_tokenizers() {
    std::vector<std::string> names;
    for (const PreTokenizerConfig& c : all_pre_tokenizers()) names.insert(names.end(), c.names.begin(), c.names.end());
    return names;
}

}  // namespace cria::vocab
