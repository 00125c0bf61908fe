// cria bench: prompt processing and generation speed, as llama-bench.
//
//   cria bench -m MODEL [-p 512[,1024...]] [-n 128[,...]] [-r 5] [-t 2[,...]]
//              [-b 2048] [-ub 512] [-ctk f16] [-ctv f16] [-o md|json]
//
// For every combination: one warm-up run, then -r timed repetitions, each on
// an empty cache. "ppN" decodes N random tokens in batches of -b; "tgN"
// decodes N tokens one at a time. t/s is mean ± standard deviation over the
// repetitions, and the table has llama-bench's columns; -o json uses
// llama-bench's field names.
//
// Beside each figure, the fraction of the machine's measured limit that it
// reaches (cpu::measure_peaks, run once at the start and printed): for pp,
// the multiply-add rate of the weight matrices against the peak of the
// instruction their kernels multiply with: the int8 dot product (quantized
// weights), vdpbf16ps (BF16 weights) or the f32 FMA (F16 and F32 weights:
// cria multiplies F16 in f32, as ggml does on a CPU without AVX512-FP16,
// since rounding either operand to bf16 would lose precision); for
// tg, the rate at which the weights are read against the memory read rate.
// --no-peak skips the probe and the column.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/core/version.h"
#include "cria/cpu/features.h"
#include "cria/cpu/peak_probe.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/context.h"
#include "cria/runtime/options.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"

namespace {

using namespace cria;

struct BenchOptions {
    std::string model;
    std::string prompts = "512";
    std::string gens = "128";
    std::string threads = "2";
    int repetitions = 5;
    uint32_t n_batch = 2048;
    std::string n_ubatch = "512";
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    std::string output = "md";
    std::string load_mode = "auto";
    bool no_repack = false;
    bool no_peak = false;
};

std::vector<uint32_t> parse_list(const std::string& text, const std::string& what) {
    std::vector<uint32_t> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(runtime::parse_count(item, what));
    if (out.empty()) throw Error(what + ": empty list");
    return out;
}

struct TestResult {
    uint32_t n_prompt = 0, n_gen = 0;
    int n_threads = 0;
    std::vector<double> samples_ns;
    double avg_ns() const {
        double s = 0;
        for (double v : samples_ns) s += v;
        return s / static_cast<double>(samples_ns.size());
    }
    std::vector<double> samples_ts() const {
        std::vector<double> ts;
        for (double v : samples_ns) ts.push_back(1e9 * (n_prompt + n_gen) / v);
        return ts;
    }
    static double mean(const std::vector<double>& v) {
        double s = 0;
        for (double x : v) s += x;
        return v.empty() ? 0 : s / static_cast<double>(v.size());
    }
    static double stddev(const std::vector<double>& v) {
        if (v.size() <= 1) return 0;
        const double m = mean(v);
        double s = 0;
        for (double x : v) s += (x - m) * (x - m);
        return std::sqrt(s / static_cast<double>(v.size() - 1));
    }
};

// llama-bench's test_prompt: random tokens in batches of n_batch, logits of the last only.
void run_prompt(runtime::Context& ctx, uint32_t n_prompt, uint32_t n_batch, uint32_t n_vocab, std::mt19937& rng) {
    runtime::Batch b;
    for (uint32_t first = 0; first < n_prompt; first += n_batch) {
        b.clear();
        const uint32_t n = std::min(n_batch, n_prompt - first);
        for (uint32_t i = 0; i < n; ++i)
            b.add(static_cast<int32_t>(rng() % n_vocab), static_cast<int32_t>(first + i), {0}, first + i + 1 == n_prompt);
        if (ctx.decode(b) != 0) throw Error("bench: the KV cache is full");
    }
}

// llama-bench's test_gen: one token at a time.
void run_gen(runtime::Context& ctx, uint32_t n_past, uint32_t n_gen, int32_t first_token, uint32_t n_vocab, std::mt19937& rng) {
    runtime::Batch b;
    int32_t token = first_token;
    for (uint32_t i = 0; i < n_gen; ++i) {
        b.clear();
        b.add(token, static_cast<int32_t>(n_past + i), {0}, true);
        if (ctx.decode(b) != 0) throw Error("bench: the KV cache is full");
        token = static_cast<int32_t>(rng() % n_vocab);
    }
}

std::string human_size(uint64_t bytes) {
    char buf[32];
    if (bytes >= (uint64_t{1} << 30))
        std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
    else
        std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
    return buf;
}

std::string human_params(uint64_t n) {
    char buf[32];
    if (n >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
    else if (n >= 1000000ull)
        std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(n) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2f K", static_cast<double>(n) / 1e3);
    return buf;
}

// What one token costs in the weight matrices, for the peak fractions.
struct TokenWork {
    double pp_ops = 0;     // 2 x multiply-adds per prompt token (the head runs for the last token only)
    double tg_bytes = 0;   // weight bytes read per generated token
    bool float_weights = false;  // most matrix bytes are F16/BF16/F32: compare with a float peak
    bool bf16_weights = false;   // ... and most of those BF16: the bf16 peak (else the f32 FMA one)
};

TokenWork token_work(const model::Model& m) {
    const gguf::File& f = m.file();
    const model::HParams& hp = m.hparams();
    const bool tied = f.find_tensor("output.weight") == nullptr;
    TokenWork w;
    double float_bytes = 0, bf16_bytes = 0, matrix_bytes = 0;
    for (const gguf::TensorInfo& t : f.tensors()) {
        // Routed experts: only n_expert_used of n_expert run per token.
        const double share = t.name.find("_exps") != std::string::npos && hp.n_expert > 0
                                 ? static_cast<double>(hp.n_expert_used) / hp.n_expert
                                 : 1.0;
        const bool embd = t.name == "token_embd.weight", head = t.name == "output.weight";
        if (!embd || tied) w.tg_bytes += share * static_cast<double>(t.n_bytes);  // the embedding row itself is tiny
        if (t.n_dims < 2 || embd || head) continue;
        w.pp_ops += 2.0 * share * static_cast<double>(t.n_elements());
        matrix_bytes += static_cast<double>(t.n_bytes);
        if (t.type == ElementType::F16 || t.type == ElementType::BF16 || t.type == ElementType::F32)
            float_bytes += static_cast<double>(t.n_bytes);
        if (t.type == ElementType::BF16) bf16_bytes += static_cast<double>(t.n_bytes);
    }
    w.float_weights = float_bytes * 2 > matrix_bytes;
    w.bf16_weights = bf16_bytes * 2 > float_bytes;
    return w;
}

// "63% int8" and the like; "" when the peak is unknown.
std::string peak_fraction(const TestResult& r, const TokenWork& w, const cpu::PeakRates& peak) {
    const double ts = TestResult::mean(r.samples_ts());
    double rate = 0, limit = 0;
    const char* what = "";
    if (r.n_prompt > 0) {
        rate = ts * w.pp_ops;
        if (w.float_weights) {
            const bool bf16 = w.bf16_weights && peak.bf16_ops_per_s > 0;
            limit = bf16 ? peak.bf16_ops_per_s : peak.f32_ops_per_s;
            what = bf16 ? "bf16" : "f32";
        } else {
            limit = peak.int8_ops_per_s;
            what = "int8";
        }
    } else {
        rate = ts * w.tg_bytes;
        limit = peak.read_bytes_per_s;
        what = "GB/s";
    }
    if (limit <= 0 || rate <= 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%% %s", 100.0 * rate / limit, what);
    return buf;
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<BenchOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file")->required();
    cmd.add_option("-p,--n-prompt", opt->prompts, "Prompt lengths, comma separated (0: no pp test)");
    cmd.add_option("-n,--n-gen", opt->gens, "Generated lengths, comma separated (0: no tg test)");
    cmd.add_option("-r,--repetitions", opt->repetitions, "Timed repetitions per test");
    cmd.add_option("-t,--threads", opt->threads, "Thread counts, comma separated");
    cmd.add_option("-b,--batch-size", opt->n_batch, "Most tokens per decode call");
    cmd.add_option("--ubatch-size", opt->n_ubatch, "Tokens per forward pass; also -ub N");
    cmd.add_option("--cache-type-k", opt->cache_type_k, "KV cache type of K; also -ctk T");
    cmd.add_option("--cache-type-v", opt->cache_type_v, "KV cache type of V; also -ctv T");
    cmd.add_option("-o,--output", opt->output, "md or json");
    cmd.add_option("--load-mode", opt->load_mode, "auto, none, mmap, mlock, mmap+mlock or dio");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cmd.add_flag("--no-peak", opt->no_peak, "Do not measure the machine's peaks (no fraction-of-peak column)");
    cmd.allow_extras();  // -ub, -ctk, -ctv: see runtime::take_dash_options
    return [opt, &cmd]() -> int {
        runtime::take_dash_options(cmd.remaining(), {{"-ub", &opt->n_ubatch},
                                                     {"-ctk", &opt->cache_type_k},
                                                     {"-ctv", &opt->cache_type_v}});
        if (opt->output != "md" && opt->output != "json") throw Error("-o must be md or json");
        if (opt->repetitions < 1) throw Error("-r must be at least 1");
        const auto prompts = parse_list(opt->prompts, "-p");
        const auto gens = parse_list(opt->gens, "-n");
        const auto threads = parse_list(opt->threads, "-t");
        const uint32_t n_ubatch = runtime::parse_count(opt->n_ubatch, "-ub");

        auto model = runtime::load_model(opt->model, runtime::parse_load_mode_or_throw(opt->load_mode), !opt->no_repack);
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
        const uint32_t n_vocab = model->hparams().n_vocab;
        const int32_t first_gen_token = vocab.add_bos() ? vocab.bos() : 0;

        // The tests, in llama-bench's order: every pp, then every tg, per thread count.
        std::vector<TestResult> results;
        for (uint32_t t : threads) {
            for (uint32_t p : prompts)
                if (p > 0) results.push_back({p, 0, static_cast<int>(t), {}});
            for (uint32_t g : gens)
                if (g > 0) results.push_back({0, g, static_cast<int>(t), {}});
        }

        const std::string size = human_size(model->size_bytes()), params = human_params(model->n_params());
        const TokenWork work = token_work(*model);
        // The CPU and the kernel level in use, so a figure says whether AMX ran.
        std::fprintf(opt->output == "md" ? stdout : stderr, "cpu: %s; %s\n", cpu::describe_cpu().c_str(),
                     cpu::best_isa() == cpu::Isa::Amx
                         ? "AMX kernels in use (packed Q8_0/Q4_0/IQ4_NL/MXFP4/Q4_K/Q6_K products of 16+ tokens)"
                         : "AMX kernels not in use");
        // The peaks of each thread count, measured before any test runs.
        std::vector<std::pair<uint32_t, cpu::PeakRates>> peaks;
        if (!opt->no_peak) {
            for (uint32_t t : threads) {
                const cpu::PeakRates p = cpu::measure_peaks(static_cast<int>(t));
                peaks.emplace_back(t, p);
                std::fprintf(opt->output == "md" ? stdout : stderr,
                             "measured peaks, %u threads: int8 %.2f TOP/s (vpdpbusd), bf16 %.2f TFLOP/s (vdpbf16ps), "
                             "f32 %.2f TFLOP/s (fma), read %.1f GB/s; weights per token: %.2f GOP (pp), %.2f GB (tg)\n",
                             t, p.int8_ops_per_s / 1e12, p.bf16_ops_per_s / 1e12, p.f32_ops_per_s / 1e12,
                             p.read_bytes_per_s / 1e9, work.pp_ops / 1e9, work.tg_bytes / 1e9);
            }
            if (opt->output == "md") std::printf("\n");
        }
        const auto peak_of = [&](int t) {
            for (const auto& [n, p] : peaks)
                if (static_cast<int>(n) == t) return p;
            return cpu::PeakRates{};
        };
        if (opt->output == "md") {
            std::printf("| %-30s | %10s | %10s | %-10s | %7s | %15s | %20s | %10s |\n", "model", "size", "params",
                        "backend", "threads", "test", "t/s", "of peak");
            std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: | %s: |\n", std::string(30, '-').c_str(),
                        std::string(9, '-').c_str(), std::string(9, '-').c_str(), std::string(10, '-').c_str(),
                        std::string(6, '-').c_str(), std::string(14, '-').c_str(), std::string(19, '-').c_str(),
                        std::string(9, '-').c_str());
            std::fflush(stdout);
        }
        nlohmann::json all = nlohmann::json::array();
        std::mt19937 rng(1234);
        for (TestResult& r : results) {
            runtime::ContextParams cp;
            cp.n_ctx = std::max<uint32_t>(r.n_prompt + r.n_gen, 1);
            cp.n_batch = opt->n_batch;
            cp.n_ubatch = n_ubatch;
            cp.n_threads = r.n_threads;
            cp.type_k = runtime::parse_cache_type(opt->cache_type_k);
            cp.type_v = runtime::parse_cache_type(opt->cache_type_v);
            runtime::Context ctx(*model, cp);
            // Warm-up (pages the weights in, sizes every buffer).
            if (r.n_prompt > 0) run_prompt(ctx, r.n_prompt, cp.n_batch, n_vocab, rng);
            if (r.n_gen > 0) run_gen(ctx, 0, 1, first_gen_token, n_vocab, rng);
            for (int rep = 0; rep < opt->repetitions; ++rep) {
                ctx.memory_clear();
                const auto t0 = std::chrono::steady_clock::now();
                if (r.n_prompt > 0) run_prompt(ctx, r.n_prompt, cp.n_batch, n_vocab, rng);
                if (r.n_gen > 0) run_gen(ctx, r.n_prompt, r.n_gen, first_gen_token, n_vocab, rng);
                r.samples_ns.push_back(
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
            }
            const auto ts = r.samples_ts();
            const std::string test = r.n_prompt > 0 ? "pp" + std::to_string(r.n_prompt) : "tg" + std::to_string(r.n_gen);
            if (opt->output == "md") {
                char tps[64];
                std::snprintf(tps, sizeof tps, "%.2f ± %.2f", TestResult::mean(ts), TestResult::stddev(ts));
                std::printf("| %-30s | %10s | %10s | %-10s | %7d | %15s | %20s | %10s |\n",
                            model->description().c_str(), size.c_str(), params.c_str(), "CPU", r.n_threads,
                            test.c_str(), tps, peak_fraction(r, work, peak_of(r.n_threads)).c_str());
                std::fflush(stdout);
            } else {
                char when[32];
                const std::time_t now = std::time(nullptr);
                std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
                all.push_back({{"build_commit", git_commit()},
                               {"build_number", build_number()},
                               {"backends", "CPU"},
                               {"cria_isa", std::string(cpu::isa_name(cpu::best_isa()))},
                               {"model_filename", opt->model},
                               {"model_type", model->description()},
                               {"model_size", model->size_bytes()},
                               {"model_n_params", model->n_params()},
                               {"n_batch", cp.n_batch},
                               {"n_ubatch", cp.n_ubatch},
                               {"n_threads", r.n_threads},
                               {"type_k", opt->cache_type_k},
                               {"type_v", opt->cache_type_v},
                               {"use_mmap", model->file().load_mode() == gguf::LoadMode::Mmap ||
                                                model->file().load_mode() == gguf::LoadMode::MmapMlock},
                               {"n_prompt", r.n_prompt},
                               {"n_gen", r.n_gen},
                               {"n_depth", 0},
                               {"test_time", when},
                               {"avg_ns", static_cast<uint64_t>(r.avg_ns())},
                               {"stddev_ns", static_cast<uint64_t>(TestResult::stddev(r.samples_ns))},
                               {"avg_ts", TestResult::mean(ts)},
                               {"stddev_ts", TestResult::stddev(ts)},
                               {"samples_ns", r.samples_ns},
                               {"samples_ts", ts},
                               {"cria_peak_fraction", peak_fraction(r, work, peak_of(r.n_threads))}});
            }
        }
        if (opt->output == "json") std::printf("%s\n", all.dump(2).c_str());
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(bench, "bench", "Measure prompt and generation speed (like llama-bench)", setup);
