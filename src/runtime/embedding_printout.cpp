// llama-embedding's stdout, printf for printf (see embedding_printout.h).
// Every layout ends with the blank line llama-embedding prints before its
// performance report (which goes to stderr there, and is not printed here).

#include "cria/runtime/embedding_printout.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "cria/core/error.h"
#include "cria/runtime/embedding.h"

namespace cria::runtime {
namespace {

[[gnu::format(printf, 2, 3)]] void append(std::string& out, const char* fmt, ...) {
    char buf[256];
    va_list args;
    va_start(args, fmt);
    const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    if (n < 0) throw Error("embedding printout: formatting failed");
    if (static_cast<size_t>(n) < sizeof buf) {
        out.append(buf, static_cast<size_t>(n));
        return;
    }
    std::string big(static_cast<size_t>(n) + 1, '\0');
    va_start(args, fmt);
    std::vsnprintf(big.data(), big.size(), fmt, args);
    va_end(args);
    out.append(big.data(), static_cast<size_t>(n));
}

// The text layout's value: integers after max-absolute normalisation.
void append_value(std::string& out, float v, int normalize) {
    if (normalize == 0)
        append(out, "%6.0f ", static_cast<double>(v));
    else
        append(out, "%9.6f ", static_cast<double>(v));
}

void append_text(std::string& out, const EmbeddingPrintout& p) {
    out += "\n";
    if (p.pooling == Pooling::None) {
        // The first and last three values of each token's row.
        for (size_t j = 0; j < p.rows.size(); ++j) {
            const std::vector<float>& row = p.rows[j];
            if (row.size() < 3)
                throw Error("per-token embeddings narrower than 3 values cannot be printed as llama-embedding does");
            append(out, "embedding %zu: ", j);
            for (size_t i = 0; i < 3; ++i) append_value(out, row[i], p.normalize);
            out += " ... ";
            for (size_t i = row.size() - 3; i < row.size(); ++i) append_value(out, row[i], p.normalize);
            out += "\n";
        }
        return;
    }
    if (p.pooling == Pooling::Rank) {
        for (size_t j = 0; j < p.rows.size(); ++j) {
            const std::vector<float>& scores = p.rows[j];
            for (size_t i = 0; i < scores.size(); ++i) {
                if (scores.size() == 1) {
                    append(out, "rerank score %zu: %8.3f\n", j, static_cast<double>(scores[0]));
                } else {
                    const std::string label =
                        i < p.cls_labels.size() && !p.cls_labels[i].empty() ? p.cls_labels[i] : std::to_string(i);
                    append(out, "rerank score %zu: %8.3f [%s]\n", j, static_cast<double>(scores[i]), label.c_str());
                }
            }
        }
        return;
    }
    // Pooled: the whole vector for one input, the first 16 values for several,
    // then their cosine similarities with each prompt cut to 6 and 10 bytes.
    const size_t n_prompts = p.prompts.size();
    for (size_t j = 0; j < n_prompts && j < p.rows.size(); ++j) {
        const std::vector<float>& row = p.rows[j];
        append(out, "embedding %zu: ", j);
        const size_t shown = n_prompts > 1 ? std::min<size_t>(16, row.size()) : row.size();
        for (size_t i = 0; i < shown; ++i) append_value(out, row[i], p.normalize);
        out += "\n";
    }
    if (n_prompts < 2) return;
    out += "\ncosine similarity matrix:\n\n";
    for (const std::string& prompt : p.prompts) append(out, "%6.6s ", prompt.c_str());
    out += "\n";
    for (size_t i = 0; i < n_prompts; ++i) {
        for (size_t j = 0; j < n_prompts; ++j)
            append(out, "%6.2f ", static_cast<double>(cosine_similarity(p.rows[i], p.rows[j])));
        append(out, "%1.10s", p.prompts[i].c_str());
        out += "\n";
    }
}

// json: an OpenAI-shaped list; json+: plus the cosine similarities of the
// rows when there are several prompts; array: the bare rows.
void append_json(std::string& out, const EmbeddingPrintout& p, const std::string& format) {
    const bool list = format != "array";
    const char* value_fmt = p.normalize == 0 ? "%1.0f" : "%1.7f";
    out += list ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[";
    for (size_t j = 0; j < p.rows.size(); ++j) {
        if (list) append(out, "    {\n      \"object\": \"embedding\",\n      \"index\": %zu,\n      \"embedding\": ", j);
        out += "[";
        for (size_t i = 0; i < p.rows[j].size(); ++i) {
            if (i) out += ",";
            append(out, value_fmt, static_cast<double>(p.rows[j][i]));
        }
        out += list ? "]\n    }" : "]";
        if (j + 1 < p.rows.size()) out += list ? ",\n" : ",";
    }
    out += list ? "\n  ]" : "]\n";
    if (format == "json+" && p.prompts.size() > 1) {
        out += ",\n  \"cosineSimilarity\": [\n";
        for (size_t i = 0; i < p.rows.size(); ++i) {
            out += "    [";
            for (size_t j = 0; j < p.rows.size(); ++j) {
                if (j) out += ", ";
                append(out, "%6.2f", static_cast<double>(cosine_similarity(p.rows[i], p.rows[j])));
            }
            out += " ]";
            if (i + 1 < p.rows.size()) out += ",\n";
        }
        out += "\n  ]";
    }
    if (list) out += "\n}\n";
}

// raw: one row per line, values separated by single spaces.
void append_raw(std::string& out, const EmbeddingPrintout& p) {
    const char* value_fmt = p.normalize == 0 ? "%1.0f" : "%1.7f";
    for (const std::vector<float>& row : p.rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            append(out, value_fmt, static_cast<double>(row[i]));
            if (i + 1 < row.size()) out += " ";
        }
        out += "\n";
    }
}

}  // namespace

std::string format_embedding_printout(const EmbeddingPrintout& p, const std::string& format) {
    if (p.rows.empty()) throw Error("embedding printout: no rows");
    if (p.pooling != Pooling::None && p.rows.size() != p.prompts.size())
        throw Error("embedding printout: " + std::to_string(p.rows.size()) + " rows for " +
                    std::to_string(p.prompts.size()) + " prompts");
    std::string out;
    if (format.empty())
        append_text(out, p);
    else if (format == "json" || format == "json+" || format == "array")
        append_json(out, p, format);
    else if (format == "raw")
        append_raw(out, p);
    else
        throw Error("--embd-output-format must be json, json+, array or raw (or empty for text), got '" + format + "'");
    out += "\n";
    return out;
}

}  // namespace cria::runtime
