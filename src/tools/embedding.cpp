// cria embedding: the pooled, normalised embedding of each prompt line, as
// llama-embedding prints them.
//
//   cria embedding -m MODEL -p TEXT [--pooling none|mean|cls|last|rank]
//                  [--embd-normalize N] [--embd-output-format json|json+|array]
//                  [--embd-separator S] [--cls-separator S] [-t T]
//
// The prompt is split into inputs at --embd-separator (default a newline).
// Pooling defaults to the file's ({arch}.pooling_type), else mean. With
// rank pooling (a reranker) each input is "query<cls-separator>document"
// (default a tab) and the output is its score. Normalisation as llama.cpp's
// embd_normalize (default 2, euclidean; -1 none; rank scores are never
// normalised). Without --embd-output-format: "embedding N: v v ..." lines
// (the whole vector for one input, the first 16 values for several, then a
// cosine similarity matrix), or "rerank score N: S"; json: an OpenAI-shaped
// list; json+: plus "cosineSimilarity"; array: the bare vectors.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/model/model.h"
#include "cria/runtime/embedding.h"
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
};

std::vector<std::string> split(const std::string& text, const std::string& sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; !sep.empty() && (at = text.find(sep, start)) != std::string::npos; start = at + sep.size())
        parts.push_back(text.substr(start, at - start));
    parts.push_back(text.substr(start));
    return parts;
}

void print_text(const std::vector<std::vector<float>>& rows, const std::vector<std::string>& prompts, bool rank,
                bool per_token, int normalize) {
    const char* fmt = normalize == 0 ? "%6.0f " : "%9.6f ";
    if (rank) {
        for (size_t j = 0; j < rows.size(); ++j) std::printf("rerank score %zu: %8.3f\n", j, static_cast<double>(rows[j][0]));
        return;
    }
    const bool several = rows.size() > 1;
    for (size_t j = 0; j < rows.size(); ++j) {
        std::printf("embedding %zu: ", j);
        const size_t n = rows[j].size();
        const size_t shown = per_token ? std::min<size_t>(3, n) : several ? std::min<size_t>(16, n) : n;
        for (size_t i = 0; i < shown; ++i) std::printf(fmt, static_cast<double>(rows[j][i]));
        if (per_token && n > 3) {
            std::printf(" ... ");
            for (size_t i = n - 3; i < n; ++i) std::printf(fmt, static_cast<double>(rows[j][i]));
        }
        std::printf("\n");
    }
    if (per_token || prompts.size() < 2) return;
    std::printf("\ncosine similarity matrix:\n\n");
    for (const std::string& p : prompts) std::printf("%6.6s ", p.c_str());
    std::printf("\n");
    for (size_t i = 0; i < rows.size(); ++i) {
        for (size_t j = 0; j < rows.size(); ++j)
            std::printf("%6.2f ", cria::runtime::cosine_similarity(rows[i], rows[j]));
        std::printf("%1.10s\n", prompts[i].c_str());
    }
}

void print_json(const std::vector<std::vector<float>>& rows, const std::string& format, int normalize) {
    const bool list = format != "array";
    std::string out = list ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[";
    char buf[48];
    for (size_t j = 0; j < rows.size(); ++j) {
        if (list) out += "    {\n      \"object\": \"embedding\",\n      \"index\": " + std::to_string(j) + ",\n      \"embedding\": ";
        out += "[";
        for (size_t i = 0; i < rows[j].size(); ++i) {
            std::snprintf(buf, sizeof buf, normalize == 0 ? "%s%1.0f" : "%s%1.7f", i ? "," : "",
                          static_cast<double>(rows[j][i]));
            out += buf;
        }
        out += list ? "]\n    }" : "]";
        if (j + 1 < rows.size()) out += list ? ",\n" : ",";
    }
    out += list ? "\n  ]" : "]\n";
    if (format == "json+" && rows.size() > 1) {
        out += ",\n  \"cosineSimilarity\": [\n";
        for (size_t i = 0; i < rows.size(); ++i) {
            out += "    [";
            for (size_t j = 0; j < rows.size(); ++j) {
                std::snprintf(buf, sizeof buf, "%s%6.2f", j ? ", " : "", cria::runtime::cosine_similarity(rows[i], rows[j]));
                out += buf;
            }
            out += i + 1 < rows.size() ? " ],\n" : " ]";
        }
        out += "\n  ]";
    }
    if (list) out += "\n}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<EmbeddingOptions>();
    cmd.add_option("-m,--model", opt->model, "GGUF model file (an embedding model, a reranker, or any decoder)")->required();
    cmd.add_option("-p,--prompt", opt->prompt, "Text to embed; one input per --embd-separator")->required();
    cmd.add_option("--pooling", opt->pooling,
                   "none, mean, cls, last or rank (default: the model's pooling_type, else mean)");
    cmd.add_option("--embd-normalize", opt->normalize,
                   "-1 none, 0 max absolute (int16), 1 taxicab, 2 euclidean (default), p > 2 p-norm");
    cmd.add_option("--embd-output-format", opt->output_format, "json, json+ (with cosine similarities) or array");
    cmd.add_option("--embd-separator", opt->separator, "Separates the inputs in the prompt (default: newline)");
    cmd.add_option("--cls-separator", opt->cls_separator, "Separates query and document under rank pooling (default: tab)");
    cmd.add_option("-t,--threads", opt->threads, "Threads (default: all hardware threads)");
    return [opt]() -> int {
        using namespace cria;
        if (!opt->output_format.empty() && opt->output_format != "json" && opt->output_format != "json+" &&
            opt->output_format != "array")
            throw Error("--embd-output-format must be json, json+ or array");
        auto model = runtime::load_model(opt->model);
        const vocab::Vocab vocab = vocab::Vocab::from_gguf(model->file());
        const runtime::Pooling pooling = opt->pooling.empty()
                                             ? runtime::model_pooling(model->hparams(), runtime::Pooling::Mean)
                                             : runtime::parse_pooling(opt->pooling);
        runtime::Embedder embedder(*model, pooling, opt->threads);
        const bool rank = pooling == runtime::Pooling::Rank, per_token = pooling == runtime::Pooling::None;
        const std::vector<std::string> prompts = split(opt->prompt, opt->separator);
        std::vector<std::vector<float>> rows;
        for (const std::string& p : prompts) {
            std::vector<runtime::TokenId> tokens;
            if (rank) {
                const auto pair = split(p, opt->cls_separator);
                if (pair.size() != 2)
                    throw Error("rank pooling scores \"query" + std::string(opt->cls_separator == "\t" ? "<TAB>" : opt->cls_separator) +
                                "document\" pairs; this input has " + std::to_string(pair.size()) + " part(s)");
                tokens = runtime::rerank_tokens(*model, vocab, pair[0], pair[1]);
            } else {
                tokens = vocab.tokenize(p, /*add_special=*/true, /*parse_special=*/true);
            }
            for (auto& row : embedder.embed(tokens)) {
                if (!rank) runtime::normalize_embedding(row, opt->normalize);
                rows.push_back(std::move(row));
            }
        }
        if (opt->output_format.empty())
            print_text(rows, prompts, rank, per_token, opt->normalize);
        else
            print_json(rows, opt->output_format, opt->normalize);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(embedding, "embedding",
                      "Print the pooled, normalised embeddings of texts (or a reranker's scores), as llama-embedding",
                      setup);
