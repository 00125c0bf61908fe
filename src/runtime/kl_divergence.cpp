// llama-perplexity's KL-divergence file and statistics (see kl_divergence.h).
// The arithmetic follows llama.cpp step by step (float here, double there):
// the printed figures are compared with its own.

#include "cria/runtime/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>

#include "cria/core/error.h"
#include "cria/runtime/batch.h"

namespace cria::runtime {

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// llama.cpp's nearest_int: round to nearest, ties to even, by the float trick.
int nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int i;
    std::memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

}  // namespace

double encode_log_probs(std::span<const float> logits, int32_t next, std::span<uint16_t> out) {
    const int n_vocab = static_cast<int>(logits.size());
    float max_logit = logits[0], min_logit = logits[0];
    for (int i = 1; i < n_vocab; ++i) {
        max_logit = std::max(max_logit, logits[i]);
        min_logit = std::min(min_logit, logits[i]);
    }
    min_logit = std::max(min_logit, max_logit - 16);
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);  // expf, as llama.cpp
    const float log_sum_exp = static_cast<float>(std::log(sum_exp));
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    std::fill(out.begin(), out.end(), uint16_t{0});
    std::memcpy(out.data(), &scale, sizeof(float));
    std::memcpy(out.data() + 2, &min_log_prob, sizeof(float));
    uint16_t* q = out.data() + 4;
    if (scale != 0) {
        const float inv_scale = 1 / scale;
        for (int i = 0; i < n_vocab; ++i)
            q[i] = logits[i] > min_logit ? static_cast<uint16_t>(nearest_int(inv_scale * (logits[i] - min_logit))) : 0;
    }
    return max_logit + log_sum_exp - logits[static_cast<size_t>(next)];
}

KlBaseWriter::KlBaseWriter(const std::string& path)
    : path_(path), out_(std::make_unique<std::ofstream>(path, std::ios::binary)) {
    if (!*out_) throw Error("cannot create '" + path + "'");
    out_->write(kMagic, sizeof kMagic);
}

void KlBaseWriter::header(int32_t n_ctx, int32_t n_vocab, int32_t n_chunk, std::span<const int32_t> tokens) {
    out_->write(reinterpret_cast<const char*>(&n_ctx), sizeof n_ctx);
    out_->write(reinterpret_cast<const char*>(&n_vocab), sizeof n_vocab);
    out_->write(reinterpret_cast<const char*>(&n_chunk), sizeof n_chunk);
    out_->write(reinterpret_cast<const char*>(tokens.data()),
                static_cast<std::streamsize>(static_cast<size_t>(n_chunk) * static_cast<size_t>(n_ctx) * sizeof(int32_t)));
    buffer_.assign(kl_row_size(n_vocab), 0);
}

void KlBaseWriter::row(std::span<const float> logits, int32_t next) {
    encode_log_probs(logits, next, buffer_);
    out_->write(reinterpret_cast<const char*>(buffer_.data()), static_cast<std::streamsize>(buffer_.size() * sizeof(uint16_t)));
}

void KlBaseWriter::close() {
    out_->flush();
    if (!*out_) throw Error("writing '" + path_ + "' failed");
    out_->close();
}

std::pair<double, float> compare_row(std::span<const float> logits, std::span<const uint16_t> base_row, int32_t next,
                                     KlSums& kld) {
    const int n_vocab = static_cast<int>(logits.size());
    float max_logit = logits[0];
    int imax = 0;
    for (int i = 1; i < n_vocab; ++i) {
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            imax = i;
        }
    }
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
    const float log_sum_exp = static_cast<float>(std::log(sum_exp));
    float scale, min_log_prob;
    std::memcpy(&scale, base_row.data(), sizeof(float));
    std::memcpy(&min_log_prob, base_row.data() + 2, sizeof(float));
    const uint16_t* base = base_row.data() + 4;

    const float nll = max_logit + log_sum_exp - logits[static_cast<size_t>(next)];
    kld.sum_nll += nll;
    kld.sum_nll2 += nll * nll;
    const float nll_base = -(scale * base[next] + min_log_prob);
    kld.sum_nll_base += nll_base;
    kld.sum_nll_base2 += nll_base * nll_base;
    kld.sum_nll_nll_base += nll * nll_base;

    max_logit += log_sum_exp;
    double sum = 0;
    int imax_base = -1;
    float p_log_base_max = 0;
    for (int i = 0; i < n_vocab; ++i) {
        const float p_log_base = scale * base[i] + min_log_prob;
        if (i == 0 || p_log_base > p_log_base_max) {
            p_log_base_max = p_log_base;
            imax_base = i;
        }
        if (p_log_base > -16.f) {
            const float p_base = std::exp(p_log_base);
            sum += p_base * (p_log_base - logits[i] + max_logit);
        }
    }
    kld.sum_kld += sum;
    kld.sum_kld2 += sum * sum;
    ++kld.count;
    if (imax == imax_base) ++kld.n_same_top;

    const float p_base = std::exp(-nll_base);
    const float p = std::exp(-nll);
    const float p_diff = p - p_base;
    kld.sum_p_diff += p_diff;
    const double p_diff2 = p_diff * p_diff;
    kld.sum_p_diff2 += p_diff2;
    kld.sum_p_diff4 += p_diff2 * p_diff2;
    kld.max_p_diff = std::max(kld.max_p_diff, std::fabs(p_diff));
    return {sum, p_diff};
}

KlResult kl_divergence(const model::Model& model, const vocab::Vocab& vocab, const std::string& base_path,
                       const KlParams& p, const std::function<void(int, const KlSums&)>& on_chunk) {
    std::ifstream in(base_path, std::ios::binary);
    if (!in) throw Error("cannot open '" + base_path + "'");
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    char magic[8] = {};
    int32_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
    in.read(magic, sizeof magic);
    in.read(reinterpret_cast<char*>(&n_ctx), sizeof n_ctx);
    in.read(reinterpret_cast<char*>(&n_vocab), sizeof n_vocab);
    in.read(reinterpret_cast<char*>(&n_chunk), sizeof n_chunk);
    if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        throw Error("'" + base_path + "' does not look like a file of log-probabilities (--kl-divergence-base)");
    if (n_vocab != static_cast<int32_t>(vocab.size()))
        throw Error("'" + base_path + "' was made with a vocabulary of " + std::to_string(n_vocab) +
                    " tokens; this model has " + std::to_string(vocab.size()));
    if (n_ctx < 4 || n_ctx > (1 << 20) || n_chunk < 1 || n_chunk > (1 << 20))
        throw Error("'" + base_path + "': n_ctx " + std::to_string(n_ctx) + ", n_chunk " + std::to_string(n_chunk) +
                    " are not sizes this file could have");
    const size_t first = static_cast<size_t>(n_ctx) / 2;
    const size_t rows = static_cast<size_t>(n_ctx) - 1 - first;
    const size_t nv = kl_row_size(n_vocab);
    const uint64_t expected = 20 + 4ull * static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(n_chunk) +
                              2ull * nv * rows * static_cast<uint64_t>(n_chunk);
    if (file_size != expected)
        throw Error("'" + base_path + "' has " + std::to_string(file_size) + " bytes; its header says " +
                    std::to_string(expected) + " (truncated or not written by --kl-divergence-base)");
    std::vector<int32_t> tokens(static_cast<size_t>(n_ctx) * static_cast<size_t>(n_chunk));
    in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * sizeof(int32_t)));
    for (int32_t t : tokens)
        if (t < 0 || t >= n_vocab) throw Error("'" + base_path + "' holds token " + std::to_string(t) + ", not in the vocabulary");

    ContextParams cp;
    cp.n_ctx = static_cast<uint32_t>(n_ctx);
    cp.n_batch = std::min<uint32_t>(std::max<uint32_t>(p.n_batch, 1), static_cast<uint32_t>(n_ctx));
    cp.n_ubatch = std::min<uint32_t>(512, cp.n_batch);
    cp.n_seq_max = 1;
    cp.n_threads = p.n_threads;
    cp.type_k = p.type_k;
    cp.type_v = p.type_v;
    Context ctx(model, cp);
    const bool add_bos = vocab.add_bos();

    KlResult r;
    r.n_ctx = n_ctx;
    r.n_chunk = n_chunk;
    r.kld_values.reserve(rows * static_cast<size_t>(n_chunk));
    r.p_diff_values.reserve(rows * static_cast<size_t>(n_chunk));
    std::vector<uint16_t> base(rows * nv);
    Batch batch;
    for (int i = 0; i < n_chunk; ++i) {
        in.read(reinterpret_cast<char*>(base.data()), static_cast<std::streamsize>(base.size() * sizeof(uint16_t)));
        if (!in) throw Error("'" + base_path + "': cannot read the log-probabilities of chunk " + std::to_string(i + 1));
        ctx.memory_clear();
        const size_t start = static_cast<size_t>(i) * static_cast<size_t>(n_ctx);
        for (size_t j = 0; j < static_cast<size_t>(n_ctx); j += cp.n_batch) {
            const size_t len = std::min<size_t>(cp.n_batch, static_cast<size_t>(n_ctx) - j);
            batch.clear();
            for (size_t k = 0; k < len; ++k) {
                const size_t pos = j + k;
                const int32_t tok = add_bos && pos == 0 ? vocab.bos() : tokens[start + pos];
                batch.add(tok, static_cast<int32_t>(pos), {0}, pos >= first && pos + 1 < static_cast<size_t>(n_ctx));
            }
            if (ctx.decode(batch) != 0) throw Error("kl-divergence: the KV cache has no room for the batch");
            for (size_t k = 0; k < len; ++k) {
                const size_t pos = j + k;
                if (pos < first || pos + 1 >= static_cast<size_t>(n_ctx)) continue;
                const auto row = ctx.logits(static_cast<int32_t>(k));  // by batch entry
                const size_t ri = pos - first;
                const auto v = compare_row(row, std::span<const uint16_t>(base.data() + ri * nv, nv),
                                           tokens[start + pos + 1], r.sums);
                r.kld_values.push_back(static_cast<float>(v.first));
                r.p_diff_values.push_back(v.second);
            }
        }
        if (on_chunk) on_chunk(i, r.sums);
    }
    return r;
}

std::pair<double, double> kl_mean_and_uncertainty(double sum, double sum2, size_t count) {
    if (count < 1) return {0., 0.};
    const double f = sum / static_cast<double>(count);
    double df = sum2 / static_cast<double>(count) - f * f;
    df = df > 0 && count > 10 ? std::sqrt(df / static_cast<double>(count - 1)) : 0.;
    return {f, df};
}

double kl_covariance(double sum_a, double sum_b, double sum_ab, size_t count) {
    if (count < 10) return 0.0;
    const double n = static_cast<double>(count);
    double var = sum_ab / n - (sum_a / n) * (sum_b / n);
    var /= n - 1;
    return var;
}

float kl_percentile(const std::vector<float>& values, float fraction) {
    if (fraction <= 0) return values.front();
    if (fraction >= 1) return values.back();
    float p = fraction * static_cast<float>(values.size() - 1);
    const size_t ip = static_cast<size_t>(p);
    p -= static_cast<float>(ip);
    return (1 - p) * values[ip] + p * values[std::min(ip + 1, values.size() - 1)];
}

}  // namespace cria::runtime
