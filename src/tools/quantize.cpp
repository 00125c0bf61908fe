// `cria quantize IN.gguf OUT.gguf TYPE`: writes a quantized copy of a model
// with llama-quantize's per-tensor type choices (see quantizer/type_mix.h).

#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/quantizer/file_type.h"
#include "cria/quantizer/imatrix.h"
#include "cria/quantizer/quantize_model.h"
#include "tools/command.h"

namespace cria::tools {
namespace {

using namespace cria::quantizer;

ElementType parse_tensor_type(const std::string& name, const std::string& flag) {
    auto t = element_type_from_name(name);
    if (!t) throw Error(flag + ": unknown tensor type '" + name + "' (f32, f16, bf16, q8_0, q4_K, ...)");
    return *t;
}

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
    return buf;
}

// One line, redrawn in place: "[ 12/ 74] blk.1.ffn_up.weight  f32 -> q4_K".
QuantizeProgress stderr_progress(bool verbose) {
    return [verbose](size_t done, size_t total, const TensorReport& r) {
        const int width = 30;
        const int filled = static_cast<int>(width * done / total);
        if (verbose) {
            std::fprintf(stderr, "[%4zu/%4zu] %-40s %6s -> %-6s %10s -> %10s%s%s\n", done, total, r.name.c_str(),
                         std::string(element_type_name(r.from)).c_str(), std::string(element_type_name(r.to)).c_str(),
                         mib(r.bytes_before).c_str(), mib(r.bytes_after).c_str(), r.note.empty() ? "" : "  note: ",
                         r.note.c_str());
        } else {
            std::fprintf(stderr, "\r[%.*s%*s] %4zu/%zu %-40.40s", filled, "##############################",
                         width - filled, "", done, total, r.name.c_str());
            if (!r.note.empty()) std::fprintf(stderr, "\nnote: %s: %s\n", r.name.c_str(), r.note.c_str());
            if (done == total) std::fprintf(stderr, "\n");
        }
        std::fflush(stderr);
    };
}

std::function<int()> setup(CLI::App& cmd) {
    struct Options {
        std::string input, output, type;
        bool pure = false, allow_requantize = false, leave_output = false, verbose = false;
        std::string output_tensor_type, token_embedding_type, imatrix;
        std::vector<std::string> tensor_types;
        int threads = 0;
    };
    auto opt = std::make_shared<Options>();
    cmd.add_option("input", opt->input, "GGUF model to quantize (f32, f16, bf16, or quantized with --allow-requantize)")
        ->required();
    cmd.add_option("output", opt->output, "GGUF file to write")->required();
    cmd.add_option("type", opt->type, "File type: " + file_type_names() + " (or llama.cpp's number)")->required();
    cmd.add_flag("--pure", opt->pure, "Every quantizable tensor gets the default type (no _S/_M/_L mixture)");
    cmd.add_option("--output-tensor-type", opt->output_tensor_type, "Type of output.weight (e.g. q8_0)");
    cmd.add_option("--token-embedding-type", opt->token_embedding_type, "Type of token_embd.weight");
    cmd.add_option("--tensor-type", opt->tensor_types, "PATTERN=TYPE: tensors whose name matches the regex get TYPE (repeatable)");
    cmd.add_option("--imatrix", opt->imatrix, "Importance matrix from llama-imatrix (.dat or .gguf)");
    cmd.add_flag("--allow-requantize", opt->allow_requantize, "Allow tensors that are already quantized to be requantized");
    cmd.add_flag("--leave-output-tensor", opt->leave_output, "Keep output.weight as it is");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    cmd.add_flag("-v,--verbose", opt->verbose, "One line per tensor instead of a progress bar");
    return [opt]() -> int {
        QuantizeOptions q;
        const auto ftype = file_type_from_name(opt->type);
        if (!ftype) throw Error("unknown quantization type '" + opt->type + "'; choose one of: " + file_type_names());
        q.mix.file_type = ftype->type;
        q.mix.pure = opt->pure;
        q.mix.quantize_output_tensor = !opt->leave_output;
        if (!opt->output_tensor_type.empty())
            q.mix.output_tensor_type = parse_tensor_type(opt->output_tensor_type, "--output-tensor-type");
        if (!opt->token_embedding_type.empty())
            q.mix.token_embedding_type = parse_tensor_type(opt->token_embedding_type, "--token-embedding-type");
        for (const std::string& spec : opt->tensor_types) {
            const size_t eq = spec.rfind('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
                throw Error("--tensor-type '" + spec + "': expected PATTERN=TYPE, e.g. attn_v=q8_0");
            // llama-quantize lowercases the pattern (tensor names are lowercase).
            std::string pattern = spec.substr(0, eq);
            for (char& c : pattern) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            q.mix.overrides.push_back({pattern, parse_tensor_type(spec.substr(eq + 1), "--tensor-type")});
        }
        ImportanceMatrix imatrix;
        if (!opt->imatrix.empty()) {
            imatrix = load_imatrix(opt->imatrix);
            q.imatrix = &imatrix;
            q.imatrix_file = opt->imatrix;
            std::fprintf(stderr, "imatrix: %zu entries from %s\n", imatrix.values.size(), opt->imatrix.c_str());
        }
        q.allow_requantize = opt->allow_requantize;
        q.n_threads = opt->threads;

        const auto start = std::chrono::steady_clock::now();
        const QuantizeSummary s = quantize_model(opt->input, opt->output, q, stderr_progress(opt->verbose));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        std::fprintf(stderr, "model size: %s (%.2f bits per weight)\n", mib(s.bytes_before).c_str(), s.bpw_before());
        std::fprintf(stderr, "quant size: %s (%.2f bits per weight), %s\n", mib(s.bytes_after).c_str(), s.bpw_after(),
                     std::string(ftype->name).c_str());
        if (s.n_fallback)
            std::fprintf(stderr, "note: %d of %zu tensors needed a fallback type\n", s.n_fallback, s.tensors.size());
        std::fprintf(stderr, "wrote %s in %.2f s\n", opt->output.c_str(), seconds);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(quantize, "quantize", "Quantize a GGUF model (Q4_K_M, Q8_0, ...) like llama-quantize", setup);

}  // namespace cria::tools
