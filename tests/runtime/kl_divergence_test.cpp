// --kl-divergence-base / --kl-divergence: llama.cpp's compressed
// log-probability rows and per-position statistics against float64
// references on random logits of awkward sizes, the file round trip on
// austen-7m, and files that are not right are refused.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "cria/core/error.h"
#include "cria/runtime/kl_divergence.h"
#include "cria/runtime/perplexity.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float spread) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, spread);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

std::vector<double> log_softmax64(const std::vector<float>& logits) {
    double m = -INFINITY, s = 0;
    for (float l : logits) m = std::max(m, static_cast<double>(l));
    for (float l : logits) s += std::exp(static_cast<double>(l) - m);
    std::vector<double> out;
    for (float l : logits) out.push_back(static_cast<double>(l) - m - std::log(s));
    return out;
}

std::vector<double> decode_row(const std::vector<uint16_t>& row, size_t n_vocab) {
    float scale, min_log_prob;
    std::memcpy(&scale, row.data(), 4);
    std::memcpy(&min_log_prob, row.data() + 2, 4);
    std::vector<double> out;
    for (size_t i = 0; i < n_vocab; ++i) out.push_back(static_cast<double>(min_log_prob) + scale * row[4 + i]);
    return out;
}

TEST(KlDivergence, RowsKeepLogProbabilitiesToTheirQuantisationStep) {
    for (size_t n : {1u, 7u, 33u, 1001u, 4096u}) {
        for (float spread : {0.5f, 4.0f}) {
            const auto logits = random_logits(n, static_cast<uint32_t>(n * 7 + spread), spread);
            std::vector<uint16_t> row(kl_row_size(static_cast<int32_t>(n)), 0xABCD);
            const int32_t next = static_cast<int32_t>(n / 2);
            const double nll = encode_log_probs(logits, next, row);
            const auto ref = log_softmax64(logits);
            EXPECT_NEAR(nll, -ref[static_cast<size_t>(next)], 1e-4) << n;
            const auto dec = decode_row(row, n);
            float scale;
            std::memcpy(&scale, row.data(), 4);
            const double top = *std::max_element(ref.begin(), ref.end());
            for (size_t i = 0; i < n; ++i) {
                if (ref[i] > top - 16) EXPECT_NEAR(dec[i], ref[i], scale * 0.5 + 1e-4) << n << " " << i;
                else EXPECT_NEAR(dec[i], top - 16, 1e-3);  // below the floor: the floor
            }
            if (n % 2 == 1) EXPECT_EQ(row.back(), 0) << "padding";
        }
    }
}

TEST(KlDivergence, CompareRowMatchesAFloat64Reference) {
    for (size_t n : {5u, 33u, 1001u}) {
        const auto base_logits = random_logits(n, 11u * static_cast<uint32_t>(n), 3.0f);
        auto logits = base_logits;
        std::mt19937 rng(5);
        std::normal_distribution<float> noise(0.0f, 0.3f);
        for (auto& l : logits) l += noise(rng);
        std::vector<uint16_t> row(kl_row_size(static_cast<int32_t>(n)));
        const int32_t next = 1;
        encode_log_probs(base_logits, next, row);
        KlSums sums;
        const auto [kld, p_diff] = compare_row(logits, row, next, sums);
        // KL(base || model) over the base's tokens above 16 nats under its top, from the stored row.
        const auto base = decode_row(row, n);
        const auto q = log_softmax64(logits);
        double ref = 0;
        for (size_t i = 0; i < n; ++i)
            if (base[i] > -16) ref += std::exp(base[i]) * (base[i] - q[i]);
        EXPECT_NEAR(kld, ref, 1e-5) << n;
        EXPECT_GE(kld, -1e-5);
        EXPECT_NEAR(p_diff, std::exp(q[next]) - std::exp(base[next]), 1e-5);
        EXPECT_EQ(sums.count, 1u);
        EXPECT_NEAR(sums.sum_nll, -q[next], 1e-4);
        EXPECT_NEAR(sums.sum_nll_base, -base[next], 1e-4);
        const size_t top_q = static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        const size_t top_b = static_cast<size_t>(std::max_element(base.begin(), base.end()) - base.begin());
        EXPECT_EQ(sums.n_same_top, top_q == top_b ? 1u : 0u);
        // A row against itself: no divergence, the same top token.
        KlSums self;
        EXPECT_NEAR(compare_row(base_logits, row, next, self).first, 0.0, 1e-4);
        EXPECT_EQ(self.n_same_top, 1u);
    }
}

TEST(KlDivergence, PercentilesInterpolateAsLlamaCpp) {
    const std::vector<float> v = {0, 1, 2, 3, 4};
    EXPECT_FLOAT_EQ(kl_percentile(v, 0.5f), 2.0f);
    EXPECT_FLOAT_EQ(kl_percentile(v, 0.1f), 0.4f);
    EXPECT_FLOAT_EQ(kl_percentile(v, 0.0f), 0.0f);
    EXPECT_FLOAT_EQ(kl_percentile(v, 1.0f), 4.0f);
    EXPECT_EQ(kl_mean_and_uncertainty(3, 5, 3).second, 0.0);  // too few values for an uncertainty
}

class KlDivergenceFile : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const auto path = test::model_path("austen-7m/austen-7m-f32.gguf").string();
        model_ = model::Model::load(path).release();
        vocab_ = new vocab::Vocab(vocab::Vocab::from_gguf(model_->file()));
        base_ = new std::string((test::temp_dir() / "austen7m.kld").string());
        std::ifstream in(test::model_path("austen-7m/valid.txt"), std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        KlBaseWriter writer(*base_);
        PerplexityParams pp;
        pp.n_ctx = 64;
        pp.n_chunks = 3;
        pp.n_threads = 2;
        pp.on_tokens = [&](int32_t n_ctx, int32_t n_chunk, const std::vector<int32_t>& tokens) {
            writer.header(n_ctx, static_cast<int32_t>(vocab_->size()), n_chunk, tokens);
        };
        pp.on_row = [&](std::span<const float> logits, int32_t next) { writer.row(logits, next); };
        ppl_ = perplexity(*model_, *vocab_, text, pp).ppl;
        writer.close();
    }
    static void TearDownTestSuite() {
        delete vocab_;
        delete model_;
        delete base_;
    }
    static model::Model* model_;
    static vocab::Vocab* vocab_;
    static std::string* base_;
    static double ppl_;
};
model::Model* KlDivergenceFile::model_ = nullptr;
vocab::Vocab* KlDivergenceFile::vocab_ = nullptr;
std::string* KlDivergenceFile::base_ = nullptr;
double KlDivergenceFile::ppl_ = 0;

TEST_F(KlDivergenceFile, TheBaseAgainstItselfAgreesEverywhere) {
    EXPECT_EQ(std::filesystem::file_size(*base_), 20u + 4u * 64 * 3 + 2u * kl_row_size(4096) * 31 * 3);
    KlParams kp;
    kp.n_threads = 2;
    kp.n_batch = 24;  // chunks decoded in pieces
    int chunks = 0;
    const KlResult r = kl_divergence(*model_, *vocab_, *base_, kp, [&](int, const KlSums&) { ++chunks; });
    EXPECT_EQ(chunks, 3);
    EXPECT_EQ(r.sums.count, 3u * 31);
    EXPECT_EQ(r.sums.n_same_top, r.sums.count);
    EXPECT_LT(std::fabs(r.sums.sum_kld / static_cast<double>(r.sums.count)), 1e-5);
    EXPECT_LT(r.sums.max_p_diff, 1e-3);
    // The model's own perplexity, and the base's from the stored rows, are the one perplexity() gave.
    EXPECT_NEAR(std::exp(r.sums.sum_nll / static_cast<double>(r.sums.count)), ppl_, ppl_ * 1e-4);
    EXPECT_NEAR(std::exp(r.sums.sum_nll_base / static_cast<double>(r.sums.count)), ppl_, ppl_ * 1e-3);
}

TEST_F(KlDivergenceFile, FilesThatAreNotRightAreRefused) {
    const auto dir = test::temp_dir();
    std::ifstream in(*base_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto write = [&](const std::string& name, const std::string& content) {
        const auto p = (dir / name).string();
        std::ofstream(p, std::ios::binary) << content;
        return p;
    };
    const KlParams kp;
    auto message = [&](const std::string& path) {
        try {
            kl_divergence(*model_, *vocab_, path, kp);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(message(write("truncated.kld", bytes.substr(0, bytes.size() - 10))).find("truncated"), std::string::npos);
    EXPECT_NE(message(write("magic.kld", "_logitz_" + bytes.substr(8))).find("does not look like"), std::string::npos);
    EXPECT_NE(message(write("empty.kld", "")).find("does not look like"), std::string::npos);
    std::string vocab = bytes;
    const int32_t other = 512;
    std::memcpy(vocab.data() + 12, &other, 4);
    EXPECT_NE(message(write("vocab.kld", vocab)).find("vocabulary of 512"), std::string::npos);
    std::string token = bytes;
    const int32_t bad = 99999;
    std::memcpy(token.data() + 20, &bad, 4);
    EXPECT_NE(message(write("token.kld", token)).find("token 99999"), std::string::npos);
    EXPECT_NE(message((dir / "missing.kld").string()).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace cria::runtime
