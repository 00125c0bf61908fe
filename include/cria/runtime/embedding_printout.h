#pragma once
// What llama-embedding (examples/embedding/embedding.cpp) writes to stdout,
// byte for byte, for rows that are already normalised: the text layout
// (--embd-output-format ""), "json", "json+", "array" and "raw". Kept apart
// from the command so a test can compare the bytes without a model.

#include <string>
#include <vector>

#include "cria/runtime/context.h"

namespace cria::runtime {

struct EmbeddingPrintout {
    // One row per input (Pooling::None: one per token of every input, in
    // order; Pooling::Rank: the n_cls_out scores of each input).
    std::vector<std::vector<float>> rows;
    std::vector<std::string> prompts;  // the inputs as split at --embd-separator
    Pooling pooling = Pooling::Mean;
    int normalize = 2;  // --embd-normalize: 0 prints integers ("%6.0f", "%1.0f")
    // Rank with several outputs: the classifier's labels
    // ({arch}.classifier.output_labels); an empty label prints its index.
    std::vector<std::string> cls_labels;
};

// The whole stdout of llama-embedding for `format` ("" for the text layout,
// json, json+, array or raw), including the blank lines it prints before the
// text layout and after every layout. Throws cria::Error for another format
// or a row narrower than the text layout reads (Pooling::None needs 3 values:
// llama-embedding reads out of bounds there).
std::string format_embedding_printout(const EmbeddingPrintout& out, const std::string& format);

}  // namespace cria::runtime
