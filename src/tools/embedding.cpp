// cria embedding: the pooled, normalised embedding of each prompt line, as
// llama-embedding prints them (runtime/embedding_printout.h: its stdout
// byte for byte).
//
//   cria embedding -m MODEL (-p TEXT | -f FILE) [--pooling none|mean|cls|last|rank]
//                  [--embd-normalize N] [--embd-output-format json|json+|array|raw]
//                  [--embd-separator S] [--cls-separator S] [-e|--no-escape] [-t T]
//
// The prompt (backslash escapes processed unless --no-escape, as llama.cpp's
// -e) is split into inputs at --embd-separator (default a newline). Pooling
// defaults to the file's ({arch}.pooling_type), else none (llama.cpp's
// default: a row per token). With rank pooling
// (a reranker) an input "query<cls-separator>document" (default a tab) is
// tokenized as llama-embedding does (rerank_cli_tokens) and the output is
// its score(s). Normalisation as llama.cpp's embd_normalize (default 2,
// euclidean; -1 none). Differences from llama-embedding, on purpose: rank
// scores are never normalised and their json rows hold the n_cls_out scores
// (llama-embedding normalises and prints n_embd floats read from a buffer of
// n_cls_out there, past its end); an unknown output format or a
// normalisation below -1 is an error (llama-embedding prints nothing or
// divides by a negative power); each input is decoded alone.

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/core/escapes.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/embedding.h"
#include "cria/runtime/embedding_printout.h"
#include "cria/runtime/options.h"
#include "cria/runtime/pipeline.h"
#include "cria/vocab/vocab.h"
#include "tools/command.h"

namespace {

struct EmbeddingOptions {
    std::string model;
    std::string prompt;
    std::string pooling;
    int normalize = 2;
    std::string output_format;
    std::string separator = "\n";
    std::string cls_separator = "\t";
    int threads = 0;
    std::string prompt_file;
    bool escape = true;
};

// As llama-embedding's split_lines: an empty separator never splits.
std::vector<std::string> split(const std::string& text, const std::string& sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; !sep.empty() && (at = text.find(sep, start)) != std::string::npos; start = at + sep.size())
        parts.push_back(text.substr(start, at - start));
    parts.push_back(text.substr(start));
    return parts;
}

// The classifier's labels ({arch}.classifier.output_labels), for rank
// pooling's text output with several scores per input.
std::vector<std::string> classifier_labels(const cria::model::Model& model) {
    std::vector<std::string> labels;
    const std::string key = model.hparams().arch_name + ".classifier.output_labels";
    if (const cria::gguf::Value* v = model.file().find(key))
        if (const std::vector<std::string>* strings = v->as_string_array()) labels = *strings;
    return labels;
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<EmbeddingOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file (an embedding model, a reranker, or any decoder)")->required();
    auto* prompt = cmd.add_option("-p,--prompt", opt->prompt, "Text to embed; one input per --embd-separator");
    auto* file = cmd.add_option("-f,--file", opt->prompt_file,
                                "A file holding the text to embed (one trailing newline is dropped)");
    prompt->excludes(file);
    cmd.add_flag("-e,--escape,!--no-escape", opt->escape,
                 "Process backslash escapes (\\n, \\t, ...) in the prompt (default: on; --no-escape: off)");
    cmd.add_option("--pooling", opt->pooling,
                   "none, mean, cls, last or rank (default: the model's pooling_type, else none, as llama.cpp)");
    cmd.add_option("--embd-normalize", opt->normalize,
                   "-1 none, 0 max absolute (int16), 1 taxicab, 2 euclidean (default), p > 2 p-norm");
    cmd.add_option("--embd-output-format", opt->output_format,
                   "empty: text; json: OpenAI style; json+: with the cosine similarity matrix; array: [[...],...]; "
                   "raw: one embedding per line");
    cmd.add_option("--embd-separator", opt->separator, "Separates the inputs in the prompt (default: newline)");
    cmd.add_option("--cls-separator", opt->cls_separator, "Separates query and document under rank pooling (default: tab)");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    return [opt]() -> int {
        using namespace cria;
        const std::string& format = opt->output_format;
        if (!format.empty() && format != "json" && format != "json+" && format != "array" && format != "raw")
            throw Error("--embd-output-format must be json, json+, array or raw (or empty for text), got '" + format + "'");
        if (opt->normalize < -1)
            throw Error("--embd-normalize must be -1, 0, 1, 2 or p > 2, got " + std::to_string(opt->normalize));
        if (!opt->prompt_file.empty()) {
            std::ifstream in(opt->prompt_file, std::ios::binary);
            if (!in) throw Error("-f: cannot open '" + opt->prompt_file + "'");
            opt->prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            if (!opt->prompt.empty() && opt->prompt.back() == '\n') opt->prompt.pop_back();  // as llama.cpp's -f
        }
        if (opt->escape) opt->prompt = process_escapes(opt->prompt);
        auto model = runtime::load_model(opt->model);
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
        // A file without {arch}.pooling_type: llama.cpp's hparams default, none.
        const runtime::Pooling pooling = opt->pooling.empty()
                                             ? runtime::model_pooling(model->hparams(), runtime::Pooling::None)
                                             : runtime::parse_pooling(opt->pooling);
        runtime::Embedder embedder(*model, pooling, opt->threads);
        const bool rank = pooling == runtime::Pooling::Rank;
        runtime::EmbeddingPrintout out;
        out.prompts = split(opt->prompt, opt->separator);
        out.pooling = pooling;
        out.normalize = opt->normalize;
        if (rank) out.cls_labels = classifier_labels(*model);
        for (const std::string& p : out.prompts) {
            const std::vector<runtime::TokenId> tokens =
                rank ? runtime::rerank_cli_tokens(*model, vocab, p, opt->cls_separator)
                     : vocab.tokenize(p, /*add_special=*/true, /*parse_special=*/true);
            for (auto& row : embedder.embed(tokens)) {
                if (!rank) runtime::normalize_embedding(row, opt->normalize);
                out.rows.push_back(std::move(row));
            }
        }
        const std::string text = runtime::format_embedding_printout(out, format);
        std::fwrite(text.data(), 1, text.size(), stdout);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(embedding, "embedding",
                      "Print the pooled, normalised embeddings of texts (or a reranker's scores), as llama-embedding",
                      setup);
