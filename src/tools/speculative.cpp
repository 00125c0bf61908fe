// cria speculative: generated tokens/s with and without speculative decoding
// on the same prompts, side by side, with the speculation metrics.
//
//   cria speculative -m TARGET -p PROMPT [-p PROMPT ...] [-n N] [-r RUNS]
//        [-md DRAFT] [--spec-type TYPE[,TYPE]] [--spec-draft-n-max N] ... [--temp T]
//   cria speculative -m TARGET --verify-cost 1,2,4,8,16
//
// Every run decodes the prompt, then generates N tokens plainly and with
// speculation (alternating, RUNS times each; the best run counts, as the
// machine is shared). At temperature 0 the two outputs must be identical,
// which is checked. --verify-cost instead prints what one target decode of
// k tokens costs relative to a decode of one token, after a prompt.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <ctime>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/generate.h"
#include "cria/runtime/options.h"
#include "cria/sampling/params.h"
#include "cria/spec/options.h"
#include "cria/spec/speculative.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"
#include "tools/spec_flags.h"

namespace {

struct SpeculativeOptions {
    std::string model;
    std::vector<std::string> prompts;
    int n_predict = 192;
    int runs = 3;
    float temp = 0.0f;
    uint32_t seed = 42;
    int threads = 0;
    uint32_t n_ctx = 4096;
    std::string verify_cost;
    int verify_context = 128;
    bool no_repack = false;
    cria::spec::SpecParams spec;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds of the whole process: on a shared machine a steadier measure of
// the work a decode does than the wall clock (it misses memory stalls of
// other processes only as far as they slow our own instructions).
double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<int> parse_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
        out.push_back(static_cast<int>(cria::runtime::parse_count(item, "--verify-cost")));
    return out;
}

// Median time of a decode of k tokens after `context` tokens, minus nothing:
// the batch is rolled back after each measurement.
int verify_cost(cria::runtime::Context& ctx, const std::vector<int>& sizes, int context, int runs) {
    using namespace cria;
    std::vector<runtime::TokenId> prompt(static_cast<size_t>(context));
    for (int i = 0; i < context; ++i) prompt[static_cast<size_t>(i)] = 1 + (i * 7) % 100;
    ctx.memory_clear();
    if (ctx.decode(runtime::Batch::from_tokens(prompt, 0)) != 0) throw Error("no room for the context");
    std::vector<double> medians, cpu_medians;
    for (int k : sizes) {
        if (k < 1) throw Error("--verify-cost: sizes must be >= 1");
        std::vector<double> times, cpu;
        for (int r = 0; r < std::max(runs, 1) * 3; ++r) {
            runtime::Batch b;
            for (int i = 0; i < k; ++i) b.add(5 + i, context + i, {0}, true);
            // A checkpoint committed with nothing kept drops the batch again
            // (as a rejected draft: memories that cannot truncate roll back too).
            if (!ctx.memory().checkpoint_begin(0, k)) throw Error("the model's memory refused a checkpoint");
            const auto t0 = Clock::now();
            const double c0 = cpu_seconds();
            if (ctx.decode(b) != 0) throw Error("no room for the verify batch");
            times.push_back(seconds_since(t0) * 1e3);
            cpu.push_back((cpu_seconds() - c0) * 1e3);
            if (!ctx.memory().checkpoint_commit(0, 0)) throw Error("the model's memory could not drop the verify batch");
        }
        std::sort(times.begin(), times.end());
        std::sort(cpu.begin(), cpu.end());
        medians.push_back(times[times.size() / 2]);
        cpu_medians.push_back(cpu[cpu.size() / 2]);
    }
    std::printf("| batch tokens | wall ms (median) | x one-token decode | CPU ms (median) | x one-token decode |\n"
                "|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizes.size(); ++i)
        std::printf("| %d | %.3f | %.2f | %.3f | %.2f |\n", sizes[i], medians[i], medians[i] / medians.front(),
                    cpu_medians[i], cpu_medians[i] / cpu_medians.front());
    return 0;
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<SpeculativeOptions>();
    // -m is read with -md through take_dash_options: CLI11 would take "-md" for "-m d".
    cmd.add_option("--model", opt->model, "Target GGUF model; also -m FILE");
    cmd.add_option("-p,--prompt", opt->prompts, "Prompt (repeat for several)");
    cmd.add_option("-n,--n-predict", opt->n_predict, "Tokens to generate per prompt (default 192)");
    cmd.add_option("-r,--runs", opt->runs, "Runs of each mode; the best counts (default 3)");
    cmd.add_flag("--no-repack", opt->no_repack,
                 "Multiply the weights as the file stores them (no packed copies for the SIMD kernels)");
    cmd.add_option("--temp", opt->temp, "Temperature (default 0: greedy, outputs compared)");
    cmd.add_option("-s,--seed", opt->seed, "Sampling seed (default 42)");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_option("--ctx-size", opt->n_ctx, "Context size (default 4096)");
    cmd.add_option("--verify-cost", opt->verify_cost, "Measure decode cost of these batch sizes, e.g. 1,2,4,8,16");
    cmd.add_option("--verify-context", opt->verify_context, "Tokens in the cache before --verify-cost batches (128)");
    cria::tools::add_spec_flags(cmd, opt, &SpeculativeOptions::spec);
    cmd.allow_extras();  // -m FILE, -md FILE
    return [opt, &cmd]() -> int {
        using namespace cria;
        std::string md;
        runtime::take_dash_options(cmd.remaining(), {{"-m", &opt->model}, {"-md", &md}});
        if (opt->model.empty()) throw Error("no model given (-m FILE)");
        if (!md.empty()) spec::apply_option(opt->spec, "-md", md);

        auto model = runtime::load_model(opt->model, gguf::LoadMode::Auto, !opt->no_repack);
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
        runtime::ContextParams cp;
        cp.n_ctx = opt->n_ctx;
        cp.n_threads = opt->threads > 0 ? opt->threads : static_cast<int>(std::thread::hardware_concurrency());
        runtime::Context ctx(*model, cp);
        std::fprintf(stderr, "cria speculative: %s, %d threads\n", model->description().c_str(), ctx.n_threads());
        if (!opt->verify_cost.empty()) return verify_cost(ctx, parse_list(opt->verify_cost), opt->verify_context, opt->runs);

        if (opt->prompts.empty()) throw Error("no prompt given (-p TEXT)");
        if (!opt->spec.enabled()) throw Error("no speculation configured (--spec-type TYPE or -md DRAFT)");
        sampling::SamplingParams sp;
        sp.temp = opt->temp;
        sp.seed = opt->seed;
        sampling::ChainContext cc;
        cc.vocab = &vocab;
        cc.n_ctx = static_cast<int32_t>(ctx.n_ctx());
        spec::Speculator speculator(opt->spec, spec::make_drafters(opt->spec, ctx, vocab));
        speculator.set_sampling(sp);

        double plain_tokens = 0, plain_s = 0, spec_tokens = 0, spec_s = 0;
        bool identical = true;
        for (const auto& text : opt->prompts) {
            const auto prompt = vocab.tokenize(text, true, true);
            double best_plain = 1e30, best_spec = 1e30;
            size_t n_plain = 0, n_spec = 0;
            for (int r = 0; r < std::max(opt->runs, 1); ++r) {
                // Generation time only: the prompt is timed apart by the context.
                auto chain = sampling::build_chain(sp, cc);
                ctx.timings() = {};
                auto t0 = Clock::now();
                const auto a = runtime::generate(ctx, vocab, chain, prompt, opt->n_predict);
                const double plain_total = seconds_since(t0) - ctx.timings().prompt_ms / 1e3;
                auto chain2 = sampling::build_chain(sp, cc);
                t0 = Clock::now();
                const auto b = speculator.generate(ctx, vocab, chain2, prompt, opt->n_predict);
                const double spec_total = seconds_since(t0) - speculator.metrics().prompt_ms / 1e3;
                if (opt->temp <= 0.0f && a.tokens != b.tokens) identical = false;
                best_plain = std::min(best_plain, plain_total);
                best_spec = std::min(best_spec, spec_total);
                n_plain = a.tokens.size();
                n_spec = b.tokens.size();
            }
            std::printf("prompt \"%s\": plain %zu tokens %.1f tok/s, speculative %zu tokens %.1f tok/s: %.2fx\n",
                        text.c_str(), n_plain, n_plain / best_plain, n_spec, n_spec / best_spec,
                        (n_spec / best_spec) / (n_plain / best_plain));
            std::printf("%s", speculator.metrics().format().c_str());
            plain_tokens += static_cast<double>(n_plain);
            plain_s += best_plain;
            spec_tokens += static_cast<double>(n_spec);
            spec_s += best_spec;
        }
        std::printf("total: plain %.1f tok/s, speculative %.1f tok/s: %.2fx%s\n", plain_tokens / plain_s,
                    spec_tokens / spec_s, (spec_tokens / spec_s) / (plain_tokens / plain_s),
                    opt->temp <= 0.0f ? (identical ? " (outputs identical)" : " (OUTPUTS DIFFER)") : "");
        return identical ? 0 : 1;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(speculative, "speculative", "Compare generation speed with and without speculative decoding",
                      setup);
