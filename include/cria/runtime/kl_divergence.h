#pragma once
// KL divergence of a model from a base model, as llama-perplexity's
// --kl-divergence-base FILE (write the base's log-probabilities while
// computing its perplexity) and --kl-divergence (compare). The file is
// llama.cpp's, byte for byte, so either tool may write it and either read it:
//
//   "_logits_"            8 bytes
//   n_ctx, n_vocab, n_chunk   int32 each (little-endian, as written in memory)
//   tokens                int32 x n_chunk * n_ctx (the text's tokens, BOS not substituted)
//   per chunk, per scored position (n_ctx - 1 - n_ctx/2 of them, from n_ctx/2):
//     nv = 2 * ((n_vocab + 1) / 2) + 4 uint16: float scale, float min_log_prob,
//     then each token's log-probability as min_log_prob + scale * q (q = 0 below
//     16 nats under the top logit), padded to an even count.
//
// The statistics are llama.cpp's (kl_divergence_result), computed with its
// float and double steps so the printed figures agree.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/vocab/vocab.h"

namespace cria::runtime {

// uint16 per row of a vocabulary of n_vocab tokens in the file.
inline size_t kl_row_size(int32_t n_vocab) { return 2 * ((static_cast<size_t>(n_vocab) + 1) / 2) + 4; }

// One logit row -> its compressed log-probabilities (kl_row_size(n) uint16);
// returns the row's -log p(next). llama.cpp's log_softmax(.., uint16_t*, ..).
double encode_log_probs(std::span<const float> logits, int32_t next, std::span<uint16_t> out);

// Writes the base file: header() once, then row() for every scored position in order.
class KlBaseWriter {
public:
    explicit KlBaseWriter(const std::string& path);  // throws cria::Error when the file cannot be created
    void header(int32_t n_ctx, int32_t n_vocab, int32_t n_chunk, std::span<const int32_t> tokens);
    void row(std::span<const float> logits, int32_t next);
    void close();  // throws cria::Error when a write failed

private:
    std::string path_;
    std::unique_ptr<std::ofstream> out_;
    std::vector<uint16_t> buffer_;
};

// Running sums of one comparison (kl_divergence_result).
struct KlSums {
    double sum_nll = 0, sum_nll2 = 0, sum_nll_base = 0, sum_nll_base2 = 0, sum_nll_nll_base = 0;
    double sum_kld = 0, sum_kld2 = 0, sum_p_diff = 0, sum_p_diff2 = 0, sum_p_diff4 = 0;
    float max_p_diff = 0;
    size_t n_same_top = 0;
    size_t count = 0;
};

// One position: the model's logits against the base's compressed row; adds to
// `sums` and returns {KL(base || model), p(next) - p_base(next)}.
std::pair<double, float> compare_row(std::span<const float> logits, std::span<const uint16_t> base_row, int32_t next,
                                     KlSums& sums);

struct KlParams {
    uint32_t n_batch = 2048;
    int n_threads = 0;
    ElementType type_k = ElementType::F16;
    ElementType type_v = ElementType::F16;
};

struct KlResult {
    int32_t n_ctx = 0;
    int32_t n_chunk = 0;
    KlSums sums;
    std::vector<float> kld_values;     // per position, in file order
    std::vector<float> p_diff_values;
};

// Reads the base file, scores its chunks with `model`; on_chunk(i, sums) after
// each. Throws cria::Error for a file that is not one, is truncated, or was
// made with another vocabulary.
KlResult kl_divergence(const model::Model& model, const vocab::Vocab& vocab, const std::string& base_path,
                       const KlParams& params, const std::function<void(int, const KlSums&)>& on_chunk = {});

// llama-perplexity's printed figures: mean and uncertainty of sum/count, covariance.
std::pair<double, double> kl_mean_and_uncertainty(double sum, double sum2, size_t count);
double kl_covariance(double sum_a, double sum_b, double sum_ab, size_t count);
// Percentile of sorted values by llama.cpp's interpolation.
float kl_percentile(const std::vector<float>& sorted, float fraction);

}  // namespace cria::runtime
