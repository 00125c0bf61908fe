#pragma once
// LoRA adapters in llama.cpp's GGUF format (general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha; for a base matrix NAME.weight
// the pair NAME.weight.lora_a [n_in, rank] and NAME.weight.lora_b [rank,
// n_out]), applied at run time: y = W x + s · B (A x) for each adapter, with
// s = user scale · alpha / rank (the user scale alone when alpha is 0), as
// llama.cpp's build_lora_mm. The adapters are never merged into the
// (packed) base weights, so each forward pass may use its own set and scales.
//
// Only matrices of the base model's linear layers may be adapted (llama.cpp
// also adapts token_embd and expert stacks: refused here with a clear
// error). Every shape is checked against the base file's tensor; a file that
// is not an adapter, names another architecture, a tensor the base model does
// not have, or an incomplete pair is refused.

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cria/model/model.h"

namespace cria::gguf {
class File;
}

namespace cria::model {

class LoraAdapter {
public:
    struct Pair {
        std::string base_name;  // the base matrix, e.g. blk.0.attn_q.weight
        const Linear* target = nullptr;
        ops::TensorView a, b;   // [n_in, rank], [rank, n_out]
        int64_t rank = 0;
    };

    // Throws cria::Error for anything the format or the base model refuses.
    static std::unique_ptr<LoraAdapter> load(const std::string& path, const Model& base);
    // From an already opened file (which the adapter keeps).
    static std::unique_ptr<LoraAdapter> from_file(std::shared_ptr<const gguf::File> file, const Model& base);

    const std::string& path() const { return path_; }
    // gguf::content_fingerprint of the adapter's file (what saved states name it by).
    uint64_t fingerprint() const { return fingerprint_; }
    float alpha() const { return alpha_; }
    const std::vector<Pair>& pairs() const { return pairs_; }
    // The multiplier of B (A x) for a pair of `rank` at the user's scale.
    float scale_for(float user_scale, int64_t rank) const;

private:
    std::shared_ptr<const gguf::File> file_;
    std::string path_;
    float alpha_ = 0.0f;
    uint64_t fingerprint_ = 0;
    std::vector<Pair> pairs_;
};

// The adapters one forward pass applies, with their scales, looked up per
// linear layer. add() with scale 0 adds nothing (the base model's output).
class LoraSet {
public:
    struct Term {
        ops::TensorView a, b;
        int64_t rank = 0;
        float scale = 0.0f;
    };

    void add(const LoraAdapter& adapter, float user_scale);
    bool empty() const { return terms_.empty(); }
    std::span<const Term> terms(const Linear* lin) const;
    // The adapted layers (for checking that a forward pass reached each one).
    size_t n_layers() const { return terms_.size(); }
    // What the set computes, as a number: the adapters' fingerprints and
    // scales in the order added (0: no adapter). Saved sequence states carry
    // it, so cells computed with other adapters are not restored.
    uint64_t identity() const { return identity_; }
    // The adapters' files and user scales, in the order added (a pipeline's
    // other stages load the same files for their own layers).
    const std::vector<std::pair<std::string, float>>& sources() const { return sources_; }
    // The adapted linear layers.
    std::vector<const Linear*> adapted() const;

private:
    std::unordered_map<const Linear*, std::vector<Term>> terms_;
    std::vector<std::pair<std::string, float>> sources_;
    uint64_t identity_ = 0;
};

// Several LoRA sets in one forward pass, each row of the micro-batch under
// one of them (ForwardInput::lora_rows and lora_row_set): requests with
// different adapters or scales share a batch. The base products run once
// over every row; a pair that several sets apply (each at its own scale) is
// one term here with a scale per set, so its delta B (A x) stays one pair of
// matrix products over the rows that apply it, added to each row at the
// row's scale.
class LoraRows {
public:
    struct Term {
        ops::TensorView a, b;
        int64_t rank = 0;
        std::vector<float> scales;  // per set, in the order given; 0: that set does not apply the pair
    };
    // The most sets one table holds (a row's set index is a byte).
    static constexpr size_t kMaxSets = 255;

    LoraRows() = default;
    // The sets (which must outlive the table's use) in the order the rows index them.
    explicit LoraRows(std::span<const LoraSet* const> sets);
    size_t n_sets() const { return n_sets_; }
    std::span<const Term> terms(const Linear* lin) const;

private:
    std::unordered_map<const Linear*, std::vector<Term>> terms_;
    size_t n_sets_ = 0;
};

}  // namespace cria::model
