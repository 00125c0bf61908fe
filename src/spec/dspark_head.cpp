// DSpark's Markov and confidence heads: loading and one chained row.

#include "cria/spec/dspark_head.h"

#include <cmath>
#include <cstring>

#include "cria/gguf/file.h"
#include "cria/spec/dflash_head.h"
#include "spec/head_file.h"

namespace cria::spec {

namespace {
constexpr const char* kArch = "dflash";
}

std::optional<DsparkHeads> DsparkHeads::load(const gguf::File& f, uint64_t n_embd, uint64_t n_vocab,
                                             int64_t n_vocab_draft) {
    const gguf::TensorInfo* w1 = f.find_tensor("markov_w1.weight");
    if (!w1) return std::nullopt;
    if (w1->n_dims != 2 || w1->ne[0] == 0 || w1->ne[0] > 65536)
        head_file_error(f, kArch, "markov_w1.weight has shape " + head_shape_text(*w1) + ", expected [rank, " +
                                      std::to_string(n_vocab) + "]");
    DsparkHeads h;
    h.rank = static_cast<uint32_t>(w1->ne[0]);
    h.sample_from_anchor = f.get_bool("dflash.sample_from_anchor", true);
    h.markov_w1 = head_matrix(f, kArch, "markov_w1.weight", h.rank, n_vocab);
    h.markov_w2 = head_matrix(f, kArch, "markov_w2.weight", h.rank, static_cast<uint64_t>(n_vocab_draft));
    if (!f.find_tensor("conf_proj.weight"))
        head_file_error(f, kArch, "a DSpark drafter (markov_w1.weight) needs its confidence head conf_proj.weight");
    h.conf_proj = head_matrix(f, kArch, "conf_proj.weight", n_embd + h.rank, 1);
    if (const auto b = head_vector(f, kArch, "conf_proj.bias", 1, false); !b.empty()) h.conf_bias = b[0];
    return h;
}

DsparkChain::DsparkChain(const DsparkHeads& heads, ops::Ops& ops, uint32_t n_embd, int64_t n_vocab_draft)
    : heads_(heads), ops_(ops), n_embd_(n_embd) {
    conf_in_.resize(static_cast<size_t>(n_embd) + heads.rank);
    bias_.resize(static_cast<size_t>(n_vocab_draft));
}

float DsparkChain::apply(DflashSession& session, int64_t row, int32_t prev) {
    const int64_t r = heads_.rank, n = static_cast<int64_t>(bias_.size());
    std::memcpy(conf_in_.data(), session.hidden(row), n_embd_ * sizeof(float));
    float* w = conf_in_.data() + n_embd_;
    ops_.get_rows(heads_.markov_w1, &prev, 1, ops::TensorView::contiguous(ElementType::F32, w, {r, 1}));
    const auto w_view = ops::TensorView::contiguous(ElementType::F32, w, {r, 1});
    ops_.matmul(heads_.markov_w2, w_view, ops::TensorView::contiguous(ElementType::F32, bias_.data(), {n, 1}));
    float* logits = session.mutable_logits(row);
    for (int64_t j = 0; j < n; ++j) logits[j] += bias_[static_cast<size_t>(j)];
    float c = 0.0f;
    ops_.matmul(heads_.conf_proj,
                ops::TensorView::contiguous(ElementType::F32, conf_in_.data(),
                                            {static_cast<int64_t>(conf_in_.size()), 1}),
                ops::TensorView::contiguous(ElementType::F32, &c, {1, 1}));
    return 1.0f / (1.0f + std::exp(-(c + heads_.conf_bias)));
}

}  // namespace cria::spec
