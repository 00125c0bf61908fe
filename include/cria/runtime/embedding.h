#pragma once
// Embeddings and reranking scores of whole inputs (llama-embedding and
// llama-server's /embeddings, /rerank): one context with pooled outputs,
// each input decoded alone from an empty memory; the normalisations of
// llama.cpp's common_embd_normalize; the reranker's prompt.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cria/runtime/context.h"

namespace cria::vocab {
class Vocab;
}

namespace cria::runtime {

class Embedder {
public:
    // pooling: what decode pools (model_pooling gives the file's choice);
    // max_tokens: the longest input (0: the model's training context, at
    // most 2048). Throws cria::Error for a pooling the model cannot do
    // (rank without a classifier head).
    Embedder(const model::Model& model, Pooling pooling, int n_threads, uint32_t max_tokens = 0);

    Pooling pooling() const { return pooling_; }
    int32_t max_tokens() const { return max_tokens_; }
    // The input's pooled embedding (Rank: its n_cls_out scores) as one row,
    // or with Pooling::None one row per token. Throws cria::Error for an
    // empty input or one longer than max_tokens().
    std::vector<std::vector<float>> embed(std::span<const TokenId> tokens);

private:
    Pooling pooling_;
    int32_t max_tokens_ = 0;
    std::unique_ptr<Context> ctx_;
};

// llama.cpp's embd_normalize: -1 none, 0 max absolute value scaled to int16
// (divides by max|x| / 32760), 2 euclidean, any other p > 0 the p-norm (1:
// taxicab). A zero vector stays zero.
void normalize_embedding(std::span<float> v, int mode);

// The tokens llama-server scores for a query and a document: the model's
// rerank template (tokenizer.chat_template.rerank, {query} and {document}
// replaced, special tokens parsed, none added) when the file has one, else
// [BOS] query [EOS] [SEP] doc [EOS], each special token only where the
// vocabulary adds it (EOS falls back to SEP when there is none).
std::vector<TokenId> rerank_tokens(const model::Model& model, const vocab::Vocab& vocab, const std::string& query,
                                   const std::string& doc);

// The tokens llama-embedding scores under rank pooling for one input line,
// which differ from the server's (rerank_tokens): an input without
// cls_separator is tokenized as it is; else its parts go into the rerank
// template (the first two as {query} and {document}) or are joined by the
// texts of the EOS and SEP tokens the vocabulary adds, and the result is
// tokenized with special tokens added and parsed ([CLS] q [SEP] d [SEP] for
// a bert vocabulary, where the server has no final [SEP]).
std::vector<TokenId> rerank_cli_tokens(const model::Model& model, const vocab::Vocab& vocab, const std::string& input,
                                       const std::string& cls_separator);

// Cosine similarity of two vectors of one size, as llama.cpp's
// common_embd_similarity_cos: 1 when both are zero, 0 when one is.
float cosine_similarity(std::span<const float> a, std::span<const float> b);

}  // namespace cria::runtime
