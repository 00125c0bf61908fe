#pragma once
// DSpark's two heads on top of a DFlash block drafter (GGUF architecture
// `dflash` plus markov_w1/markov_w2/conf_proj; shared/docs/draft-formats.md §5,
// llama.cpp's build_dspark_markov_head):
//
//   Markov head      logits'(i) = logits(i) + w2 · w1[prev(i)]  (draft vocabulary;
//                    prev of the first read row = the block's anchor, then the
//                    arg-max of the previous row's biased logits)
//   confidence head  conf(i) = sigmoid(conf_proj · [t_embd(i) ; w1[prev(i)]] + b)
//                    (t_embd = the decoder's post-output_norm hidden row)
//
// The block layout depends on dflash.sample_from_anchor (missing: true):
// anchor-first reads every block row (row 0 drafts the token after the
// anchor), bonus-anchor reads rows 1.. as DFlash does.

#include <cstdint>
#include <optional>
#include <vector>

#include "cria/ops/ops.h"

namespace cria::gguf {
class File;
}

namespace cria::spec {

class DflashSession;

struct DsparkHeads {
    uint32_t rank = 0;                 // R, markov_w1's ne0
    bool sample_from_anchor = true;    // anchor-first layout
    ops::TensorView markov_w1;         // [R, n_vocab]: rows indexed by full-vocabulary ids
    ops::TensorView markov_w2;         // [R, n_vocab_draft]
    ops::TensorView conf_proj;         // [n_embd + R, 1]
    float conf_bias = 0.0f;            // conf_proj.bias (0 when absent)

    // The heads when the file has markov_w1.weight (nullopt otherwise);
    // conf_proj is required with it. Throws cria::Error on bad shapes.
    static std::optional<DsparkHeads> load(const gguf::File& f, uint64_t n_embd, uint64_t n_vocab,
                                           int64_t n_vocab_draft);
};

// Applies the heads to one block row of the session's last block, in place:
// adds the Markov bias for `prev` (a target token id) to the row's logits and
// returns the row's confidence.
class DsparkChain {
public:
    DsparkChain(const DsparkHeads& heads, ops::Ops& ops, uint32_t n_embd, int64_t n_vocab_draft);
    float apply(DflashSession& session, int64_t row, int32_t prev);

private:
    const DsparkHeads& heads_;
    ops::Ops& ops_;
    uint32_t n_embd_;
    std::vector<float> conf_in_, bias_;  // [t_embd ; w1[prev]], w2 · w1[prev]
};

}  // namespace cria::spec
