// cria perplexity: perplexity of a model on a text file, as llama-perplexity.
//
//   cria perplexity -m MODEL -f TEXT [-c 512] [-b 2048] [-t THREADS] [--chunks N]
//                   [--kl-divergence-base FILE]      (also save the log-probabilities)
//   cria perplexity -m MODEL --kl-divergence-base FILE --kl-divergence   (compare with them)
//
// stdout: the running estimate after every chunk ([1]x,[2]y,...) and the final
// line "Final estimate: PPL = X +/- Y"; with --kl-divergence, llama-perplexity's
// table per chunk and its perplexity, KL divergence and token probability
// statistics. Logs go to stderr. The FILE is llama.cpp's: either tool reads
// what the other wrote.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/kl_divergence.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/options.h"
#include "cria/runtime/perplexity.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"
#include "tools/lora_flags.h"

namespace {

struct PerplexityOptions {
    cria::tools::LoraFlags lora;  // --lora, --lora-scaled
    std::string model;
    std::string file;
    uint32_t n_ctx = 512;
    uint32_t n_batch = 2048;
    int threads = 0;
    int chunks = -1;
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    std::string load_mode = "auto";
    bool no_repack = false;
    std::string kl_base;
    bool kl_divergence = false;
};

// llama-perplexity's kl_divergence() output, figure for figure.
void print_kl_chunk(int i, const cria::runtime::KlSums& kld) {
    using namespace cria::runtime;
    if (i == 0)
        std::printf("\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              \u0394p RMS            Same top p\n");
    std::printf("%4d", i + 1);
    const auto log_ppl = kl_mean_and_uncertainty(kld.sum_nll, kld.sum_nll2, kld.count);
    const double ppl_val = std::exp(log_ppl.first);
    std::printf("    %9.4lf \u00b1 %9.4lf", ppl_val, ppl_val * log_ppl.second);
    const auto log_ppl_base = kl_mean_and_uncertainty(kld.sum_nll_base, kld.sum_nll_base2, kld.count);
    const double cov = kl_covariance(kld.sum_nll, kld.sum_nll_base, kld.sum_nll_nll_base, kld.count);
    std::printf("    %10.5lf \u00b1 %10.5lf", log_ppl.first - log_ppl_base.first,
                std::sqrt(log_ppl.second * log_ppl.second + log_ppl_base.second * log_ppl_base.second - 2.0 * cov));
    const auto kl = kl_mean_and_uncertainty(kld.sum_kld, kld.sum_kld2, kld.count);
    std::printf("    %10.5lf \u00b1 %10.5lf", kl.first, kl.second);
    const auto mse = kl_mean_and_uncertainty(kld.sum_p_diff2, kld.sum_p_diff4, kld.count);
    const double rms = std::sqrt(mse.first);
    std::printf("    %6.3lf \u00b1 %6.3lf %%", 100.0 * rms, 100.0 * 0.5 / rms * mse.second);
    const double top = 1. * static_cast<double>(kld.n_same_top) / static_cast<double>(kld.count);
    std::printf("    %6.3lf \u00b1 %6.3lf %%\n", 100.0 * top, 100.0 * std::sqrt(top * (1 - top) / static_cast<double>(kld.count - 1)));
    std::fflush(stdout);
}

void print_kl_statistics(cria::runtime::KlResult& r) {
    using namespace cria::runtime;
    const KlSums& kld = r.sums;
    std::printf("\n");
    if (kld.count < 100) return;  // llama.cpp: no statistics on so few values
    std::sort(r.kld_values.begin(), r.kld_values.end());
    std::sort(r.p_diff_values.begin(), r.p_diff_values.end());
    const auto median = [](const std::vector<float>& v) {
        return v.size() % 2 == 0 ? 0.5f * (v[v.size() / 2] + v[v.size() / 2 - 1]) : v[v.size() / 2];
    };
    std::printf("====== Perplexity statistics ======\n");
    const auto log_ppl = kl_mean_and_uncertainty(kld.sum_nll, kld.sum_nll2, kld.count);
    const double ppl_val = std::exp(log_ppl.first), ppl_unc = ppl_val * log_ppl.second;
    std::printf("Mean PPL(Q)                   : %10.6lf \u00b1 %10.6lf\n", ppl_val, ppl_unc);
    const auto log_base = kl_mean_and_uncertainty(kld.sum_nll_base, kld.sum_nll_base2, kld.count);
    const double base_val = std::exp(log_base.first), base_unc = base_val * log_base.second;
    std::printf("Mean PPL(base)                : %10.6lf \u00b1 %10.6lf\n", base_val, base_unc);
    const double cov = kl_covariance(kld.sum_nll, kld.sum_nll_base, kld.sum_nll_nll_base, kld.count);
    std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * cov / (log_ppl.second * log_base.second));
    const double ratio = log_ppl.first - log_base.first;
    const double ratio_unc = std::sqrt(log_ppl.second * log_ppl.second + log_base.second * log_base.second - 2.0 * cov);
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf \u00b1 %10.6lf\n", ratio, ratio_unc);
    std::printf("Mean PPL(Q)/PPL(base)         : %10.6lf \u00b1 %10.6lf\n", std::exp(ratio), std::exp(ratio) * ratio_unc);
    const double ppl_cov = ppl_val * base_val * cov;
    std::printf("Mean PPL(Q)-PPL(base)         : %10.6lf \u00b1 %10.6lf\n", ppl_val - base_val,
                std::sqrt(ppl_unc * ppl_unc + base_unc * base_unc - 2.0 * ppl_cov));
    std::printf("\n====== KL divergence statistics ======\n");
    const auto kl = kl_mean_and_uncertainty(kld.sum_kld, kld.sum_kld2, kld.count);
    const auto& kv = r.kld_values;
    std::printf("Mean    KLD: %10.6lf \u00b1 %10.6lf\n", kl.first, kl.second);
    std::printf("Maximum KLD: %10.6f\n", kv.back());
    std::printf("99.9%%   KLD: %10.6f\n", kl_percentile(kv, 0.999f));
    std::printf("99.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.990f));
    std::printf("95.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.950f));
    std::printf("90.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.900f));
    std::printf("Median  KLD: %10.6f\n", median(kv));
    std::printf("10.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.100f));
    std::printf(" 5.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.050f));
    std::printf(" 1.0%%   KLD: %10.6f\n", kl_percentile(kv, 0.010f));
    std::printf(" 0.1%%   KLD: %10.6f\n", kl_percentile(kv, 0.001f));
    std::printf("Minimum KLD: %10.6f\n", kv.front());
    std::printf("\n====== Token probability statistics ======\n");
    const auto& pv = r.p_diff_values;
    const auto pd = kl_mean_and_uncertainty(kld.sum_p_diff, kld.sum_p_diff2, kld.count);
    std::printf("Mean    \u0394p: %6.3lf \u00b1 %5.3lf %%\n", 100.0 * pd.first, 100.0 * pd.second);
    std::printf("Maximum \u0394p: %6.3lf%%\n", 100.0 * pv.back());
    const std::pair<const char*, float> pcts[] = {{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f},
                                                  {"90.0%", 0.900f}, {"75.0%", 0.750f}};
    for (const auto& [name, f] : pcts) std::printf("%s   \u0394p: %6.3lf%%\n", name, 100.0 * kl_percentile(pv, f));
    std::printf("Median  \u0394p: %6.3lf%%\n", 100.0 * median(pv));
    const std::pair<const char*, float> low[] = {{"25.0%", 0.250f}, {"10.0%", 0.100f}, {" 5.0%", 0.050f},
                                                 {" 1.0%", 0.010f}, {" 0.1%", 0.001f}};
    for (const auto& [name, f] : low) std::printf("%s   \u0394p: %6.3lf%%\n", name, 100.0 * kl_percentile(pv, f));
    std::printf("Minimum \u0394p: %6.3lf%%\n", 100.0 * pv.front());
    const auto mse = kl_mean_and_uncertainty(kld.sum_p_diff2, kld.sum_p_diff4, kld.count);
    const double rms = std::sqrt(mse.first);
    std::printf("RMS \u0394p    : %6.3lf \u00b1 %5.3lf %%\n", 100.0 * rms, 100.0 * 0.5 / rms * mse.second);
    const double top = 1.0 * static_cast<double>(kld.n_same_top) / static_cast<double>(kld.count);
    std::printf("Same top p: %6.3lf \u00b1 %5.3lf %%\n", 100.0 * top,
                100.0 * std::sqrt(top * (1.0 - top) / static_cast<double>(kld.count - 1)));
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<PerplexityOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file")->required();
    cmd.add_option("-f,--file", opt->file, "Text file to score (not with --kl-divergence: the base file holds the tokens)");
    cmd.add_option("--kl-divergence-base", opt->kl_base,
                   "With -f: also save the log-probabilities to FILE (llama.cpp's format); with --kl-divergence: "
                   "the saved base to compare with");
    cmd.add_flag("--kl-divergence", opt->kl_divergence,
                 "Compare this model with the base saved by --kl-divergence-base: KL divergence, top-token "
                 "agreement, probability differences (as llama-perplexity)");
    cmd.add_option("--ctx-size", opt->n_ctx, "Tokens per chunk (default 512); also -c N");
    cmd.add_option("-b,--batch-size", opt->n_batch, "Most tokens per decode call (chunks share it as sequences)");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("--chunks", opt->chunks, "Score at most this many chunks");
    cmd.add_option("--cache-type-k", opt->cache_type_k, "KV cache type of K; also -ctk T");
    cmd.add_option("--cache-type-v", opt->cache_type_v, "KV cache type of V; also -ctv T");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cria::tools::add_lora_flags(cmd, &opt->lora);
    cmd.allow_extras();  // -c, -ctk, -ctv: see runtime::take_dash_options
    return [opt, &cmd]() -> int {
        using namespace cria;
        std::string n_ctx;
        runtime::take_dash_options(cmd.remaining(),
                                   {{"-c", &n_ctx}, {"-ctk", &opt->cache_type_k}, {"-ctv", &opt->cache_type_v}});
        if (!n_ctx.empty()) opt->n_ctx = runtime::parse_count(n_ctx, "-c");
        if (opt->kl_divergence) {
            if (opt->kl_base.empty()) throw Error("--kl-divergence needs --kl-divergence-base FILE (the saved base)");
            if (!opt->file.empty()) throw Error("--kl-divergence reads its tokens from the base file: no -f");
            if (!n_ctx.empty()) throw Error("--kl-divergence uses the base file's context size: no -c");
            auto model = model::Model::load(opt->model, runtime::parse_load_mode_or_throw(opt->load_mode), !opt->no_repack);
            const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
            runtime::KlParams kp;
            kp.n_batch = opt->n_batch;
            kp.n_threads = opt->threads > 0 ? opt->threads : static_cast<int>(std::thread::hardware_concurrency());
            kp.type_k = runtime::parse_cache_type(opt->cache_type_k);
            kp.type_v = runtime::parse_cache_type(opt->cache_type_v);
            std::fprintf(stderr, "cria perplexity: %s, comparing with %s, %d threads\n", model->description().c_str(),
                         opt->kl_base.c_str(), kp.n_threads);
            auto r = runtime::kl_divergence(*model, vocab, opt->kl_base, kp, print_kl_chunk);
            print_kl_statistics(r);
            return 0;
        }
        if (opt->file.empty()) throw Error("no text to score (-f FILE)");
        std::ifstream in(opt->file, std::ios::binary);
        if (!in) throw Error("cannot open '" + opt->file + "' for reading");
        std::ostringstream ss;
        ss << in.rdbuf();

        auto model = runtime::load_model(opt->model, runtime::parse_load_mode_or_throw(opt->load_mode), !opt->no_repack);
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
        runtime::PerplexityParams pp;
        pp.n_ctx = opt->n_ctx;
        pp.n_batch = opt->n_batch;
        pp.n_chunks = opt->chunks;
        std::vector<std::unique_ptr<model::LoraAdapter>> adapters;
        const model::LoraSet lora = tools::load_lora_flags(opt->lora, *model, adapters);
        pp.lora = &lora;
        pp.n_threads = opt->threads > 0 ? opt->threads : static_cast<int>(std::thread::hardware_concurrency());
        pp.type_k = runtime::parse_cache_type(opt->cache_type_k);
        pp.type_v = runtime::parse_cache_type(opt->cache_type_v);
        std::unique_ptr<runtime::KlBaseWriter> writer;
        if (!opt->kl_base.empty()) {
            writer = std::make_unique<runtime::KlBaseWriter>(opt->kl_base);
            pp.on_tokens = [&](int32_t ctx_size, int32_t n_chunk, const std::vector<int32_t>& tokens) {
                writer->header(ctx_size, static_cast<int32_t>(vocab.size()), n_chunk, tokens);
            };
            pp.on_row = [&](std::span<const float> logits, int32_t next) { writer->row(logits, next); };
        }
        std::fprintf(stderr, "cria perplexity: %s, n_ctx = %u, n_batch = %u, %d threads\n", model->description().c_str(),
                     pp.n_ctx, pp.n_batch, pp.n_threads);
        const auto r = runtime::perplexity(*model, vocab, ss.str(), pp, [](int i, double estimate) {
            std::printf("[%d]%.4lf,", i + 1, estimate);
            std::fflush(stdout);
        });
        std::fprintf(stderr, "\ncria perplexity: %zu tokens, %d chunks, %d sequences per batch, %lld tokens scored\n",
                     r.n_tokens, r.n_chunks, r.n_seq, static_cast<long long>(r.n_scored));
        std::printf("\nFinal estimate: PPL = %.4lf +/- %.5lf\n", r.ppl, r.uncertainty);
        if (writer) {
            writer->close();
            std::fprintf(stderr, "cria perplexity: log-probabilities saved to %s\n", opt->kl_base.c_str());
        }
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(perplexity, "perplexity", "Perplexity of a model on a text (like llama-perplexity)", setup);
