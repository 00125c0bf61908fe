#include "cria/runtime/embedding.h"

#include <algorithm>
#include <cmath>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/vocab/vocab.h"

namespace cria::runtime {

Embedder::Embedder(const model::Model& model, Pooling pooling, int n_threads, uint32_t max_tokens) : pooling_(pooling) {
    const model::HParams& hp = model.hparams();
    if (max_tokens == 0) max_tokens = std::min<uint32_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : 2048, 2048);
    max_tokens_ = static_cast<int32_t>(max_tokens);
    ContextParams cp;
    cp.n_ctx = max_tokens;
    cp.n_batch = max_tokens;
    // An encoder attends both ways: the whole input in one micro-batch.
    cp.n_ubatch = hp.causal_attn ? std::min<uint32_t>(512, max_tokens) : max_tokens;
    cp.n_seq_max = 1;
    cp.n_threads = n_threads;
    cp.embeddings = true;
    cp.pooling = pooling;
    ctx_ = std::make_unique<Context>(model, cp);
}

std::vector<std::vector<float>> Embedder::embed(std::span<const TokenId> tokens) {
    if (tokens.empty()) throw Error("cannot embed an empty input");
    if (tokens.size() > static_cast<size_t>(max_tokens_))
        throw Error("the input has " + std::to_string(tokens.size()) + " tokens, more than the " +
                    std::to_string(max_tokens_) + " an input may have");
    ctx_->memory_clear();
    Batch b;
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), {0}, true);
    if (ctx_->decode(b) != 0) throw Error("the embedding context has no room for the input");
    std::vector<std::vector<float>> rows;
    if (pooling_ == Pooling::None) {
        for (size_t i = 0; i < tokens.size(); ++i) {
            const auto e = ctx_->embeddings(static_cast<int32_t>(i));
            rows.emplace_back(e.begin(), e.end());
        }
    } else {
        const auto e = ctx_->embeddings_seq(0);
        rows.emplace_back(e.begin(), e.end());
    }
    return rows;
}

void normalize_embedding(std::span<float> v, int mode) {
    // As common_embd_normalize, rounding included: squares are float
    // products summed in double, and the factor is a float.
    double sum = 0.0;
    switch (mode) {
        case -1: sum = 1.0; break;
        case 0:
            for (float x : v) sum = std::max(sum, static_cast<double>(std::abs(x)));
            sum /= 32760.0;  // int16 range
            break;
        case 2:
            for (float x : v) sum += x * x;
            sum = std::sqrt(sum);
            break;
        default:
            if (mode < 0) throw Error("embedding normalisation " + std::to_string(mode) + " is not one of -1, 0, 1, 2, p > 2");
            for (float x : v) sum += std::pow(std::abs(x), mode);
            sum = std::pow(sum, 1.0 / mode);
            break;
    }
    const float norm = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
    for (float& x : v) x = x * norm;
}

std::vector<TokenId> rerank_tokens(const model::Model& model, const vocab::Vocab& vocab, const std::string& query,
                                   const std::string& doc) {
    if (const auto tmpl = model.file().get_string("tokenizer.chat_template.rerank")) {
        std::string prompt = *tmpl;
        const auto replace_all = [&prompt](const std::string& from, const std::string& to) {
            for (size_t at = prompt.find(from); at != std::string::npos; at = prompt.find(from, at + to.size()))
                prompt.replace(at, from.size(), to);
        };
        replace_all("{query}", query);
        replace_all("{document}", doc);
        return vocab.tokenize(prompt, /*add_special=*/false, /*parse_special=*/true);
    }
    TokenId eos = vocab.eos();
    if (eos == vocab::kNoToken) eos = vocab.sep();
    std::vector<TokenId> out;
    if (vocab.add_bos()) out.push_back(vocab.bos());
    const auto q = vocab.tokenize(query, false, false), d = vocab.tokenize(doc, false, false);
    out.insert(out.end(), q.begin(), q.end());
    if (vocab.add_eos()) out.push_back(eos);
    if (vocab.add_sep()) out.push_back(vocab.sep());
    out.insert(out.end(), d.begin(), d.end());
    if (vocab.add_eos()) out.push_back(eos);
    return out;
}

std::vector<TokenId> rerank_cli_tokens(const model::Model& model, const vocab::Vocab& vocab, const std::string& input,
                                       const std::string& cls_separator) {
    if (cls_separator.empty() || input.find(cls_separator) == std::string::npos)
        return vocab.tokenize(input, /*add_special=*/true, /*parse_special=*/true);
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; (at = input.find(cls_separator, start)) != std::string::npos; start = at + cls_separator.size())
        parts.push_back(input.substr(start, at - start));
    parts.push_back(input.substr(start));
    std::string text;
    if (const auto tmpl = model.file().get_string("tokenizer.chat_template.rerank")) {
        // Only the first two parts: the query and the document.
        text = *tmpl;
        const auto replace_all = [&text](const std::string& from, const std::string& to) {
            for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
                text.replace(at, from.size(), to);
        };
        replace_all("{query}", parts[0]);
        replace_all("{document}", parts[1]);
    } else {
        // The parts joined by the texts of the EOS and SEP tokens the
        // vocabulary adds; parsed back into those tokens below.
        const std::string eos = vocab.add_eos() ? vocab.token(vocab.eos()).text : "";
        const std::string sep = vocab.add_sep() ? vocab.token(vocab.sep()).text : "";
        for (size_t i = 0; i < parts.size(); ++i) {
            text += parts[i];
            if (i + 1 < parts.size()) text += eos + sep;
        }
    }
    return vocab.tokenize(text, /*add_special=*/true, /*parse_special=*/true);
}

float cosine_similarity(std::span<const float> a, std::span<const float> b) {
    // As common_embd_similarity_cos: float products summed in double.
    double dot = 0, na = 0, nb = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    if (na == 0.0 || nb == 0.0) return na == 0.0 && nb == 0.0 ? 1.0f : 0.0f;  // two zero vectors are alike
    return static_cast<float>(dot / (std::sqrt(na) * std::sqrt(nb)));
}

}  // namespace cria::runtime
