// cria perplexity: perplexity of a model on a text file, as llama-perplexity.
//
//   cria perplexity -m MODEL -f TEXT [-c 512] [-b 2048] [-t THREADS] [--chunks N]
//
// stdout: the running estimate after every chunk ([1]x,[2]y,...) and the final
// line "Final estimate: PPL = X +/- Y"; logs go to stderr.

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
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
};

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<PerplexityOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file")->required();
    cmd.add_option("-f,--file", opt->file, "Text file to score")->required();
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
        std::ifstream in(opt->file, std::ios::binary);
        if (!in) throw Error("cannot open '" + opt->file + "' for reading");
        std::ostringstream ss;
        ss << in.rdbuf();

        auto model = model::Model::load(opt->model, runtime::parse_load_mode_or_throw(opt->load_mode), !opt->no_repack);
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
        std::fprintf(stderr, "cria perplexity: %s, n_ctx = %u, n_batch = %u, %d threads\n", model->description().c_str(),
                     pp.n_ctx, pp.n_batch, pp.n_threads);
        const auto r = runtime::perplexity(*model, vocab, ss.str(), pp, [](int i, double estimate) {
            std::printf("[%d]%.4lf,", i + 1, estimate);
            std::fflush(stdout);
        });
        std::fprintf(stderr, "\ncria perplexity: %zu tokens, %d chunks, %d sequences per batch, %lld tokens scored\n",
                     r.n_tokens, r.n_chunks, r.n_seq, static_cast<long long>(r.n_scored));
        std::printf("\nFinal estimate: PPL = %.4lf +/- %.5lf\n", r.ppl, r.uncertainty);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(perplexity, "perplexity", "Perplexity of a model on a text (like llama-perplexity)", setup);
