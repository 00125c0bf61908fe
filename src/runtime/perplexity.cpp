#include "cria/runtime/perplexity.h"

#include <algorithm>
#include <cmath>

#include "cria/core/error.h"

namespace cria::runtime {
namespace {

// -log p(token) from a logit row, as llama.cpp's log_softmax: float maximum,
// double sum of exponentials.
double negative_log_likelihood(std::span<const float> logits, int32_t token) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum_exp = 0.0;
    for (float l : logits) sum_exp += std::exp(static_cast<double>(l - max_logit));
    return -(static_cast<double>(logits[static_cast<size_t>(token)] - max_logit) - std::log(sum_exp));
}

}  // namespace

PerplexityResult perplexity(const model::Model& model, const vocab::Vocab& vocab, const std::string& text,
                            const PerplexityParams& p, const std::function<void(int, double)>& on_chunk) {
    if (p.n_ctx < 2) throw Error("perplexity: n_ctx must be at least 2");
    std::vector<int32_t> tokens = vocab.tokenize(text, true, false);
    const size_t n_ctx = p.n_ctx;
    if (tokens.size() < 2 * n_ctx)
        throw Error("perplexity: the text has " + std::to_string(tokens.size()) + " tokens; at least 2 * n_ctx = " +
                    std::to_string(2 * n_ctx) + " are needed");
    int n_chunk = static_cast<int>(tokens.size() / n_ctx);
    if (p.n_chunks >= 0) n_chunk = std::min(n_chunk, p.n_chunks);
    const size_t n_batch = std::min<size_t>(p.n_batch, n_ctx * static_cast<size_t>(std::max(1, n_chunk)));
    const int n_seq = p.on_row ? 1 : static_cast<int>(std::max<size_t>(1, std::min<size_t>(n_batch / n_ctx, 64)));
    const size_t batch_len = std::min(n_batch, n_ctx);  // tokens of one chunk per decode call
    const bool add_bos = vocab.add_bos();

    ContextParams cp;
    cp.n_ctx = static_cast<uint32_t>(n_ctx * n_seq);
    cp.n_batch = static_cast<uint32_t>(std::max(n_batch, batch_len * n_seq));
    cp.n_ubatch = std::min<uint32_t>(512, cp.n_batch);
    cp.n_seq_max = static_cast<uint32_t>(n_seq);
    cp.n_threads = p.n_threads;
    cp.type_k = p.type_k;
    cp.type_v = p.type_v;
    Context ctx(model, cp);
    if (p.on_tokens) p.on_tokens(static_cast<int32_t>(n_ctx), n_chunk, tokens);
    if (p.lora) ctx.set_lora(*p.lora);

    PerplexityResult r;
    r.n_seq = n_seq;
    r.n_tokens = tokens.size();
    const size_t first = n_ctx / 2;
    double nll = 0.0, nll2 = 0.0;
    int64_t count = 0;
    Batch batch;
    std::vector<std::vector<double>> chunk_nll(static_cast<size_t>(n_seq));  // scored tokens of each sequence
    for (int i = 0; i < n_chunk; i += n_seq) {
        const int seqs = std::min(n_seq, n_chunk - i);
        ctx.memory_clear();
        for (auto& l : chunk_nll) l.clear();
        for (size_t j = 0; j < n_ctx; j += batch_len) {
            batch.clear();
            const size_t len = std::min(batch_len, n_ctx - j);
            for (int s = 0; s < seqs; ++s) {
                const size_t start = static_cast<size_t>(i + s) * n_ctx;
                for (size_t k = 0; k < len; ++k) {
                    int32_t tok = tokens[start + j + k];
                    if (add_bos && j == 0 && k == 0) tok = vocab.bos();
                    const size_t pos = j + k;
                    batch.add(tok, static_cast<int32_t>(pos), {s}, pos >= first && pos + 1 < n_ctx);
                }
            }
            if (ctx.decode(batch) != 0) throw Error("perplexity: the KV cache has no room for the batch");
            for (int s = 0; s < seqs; ++s)
                for (size_t k = 0; k < len; ++k) {
                    const size_t pos = j + k;
                    if (pos < first || pos + 1 >= n_ctx) continue;
                    const auto row = ctx.logits(static_cast<int32_t>(static_cast<size_t>(s) * len + k));
                    const int32_t next = tokens[static_cast<size_t>(i + s) * n_ctx + pos + 1];
                    chunk_nll[static_cast<size_t>(s)].push_back(negative_log_likelihood(row, next));
                    if (p.on_row) p.on_row(row, next);
                }
        }
        // Sequence by sequence, as llama.cpp: each chunk's estimate includes all chunks before it.
        for (int s = 0; s < seqs; ++s) {
            for (double v : chunk_nll[static_cast<size_t>(s)]) {
                nll += v;
                nll2 += v * v;
                ++count;
            }
            const double estimate = std::exp(nll / static_cast<double>(count));
            r.running.push_back(estimate);
            if (on_chunk) on_chunk(i + s, estimate);
        }
    }
    const double mean = nll / static_cast<double>(count);
    double var = nll2 / static_cast<double>(count) - mean * mean;
    r.ppl = std::exp(mean);
    r.uncertainty = var > 0 && count > 1 ? std::sqrt(var / static_cast<double>(count - 1)) * r.ppl : 0.0;
    r.n_chunks = n_chunk;
    r.n_scored = count;
    return r;
}

}  // namespace cria::runtime
