// Model::classify: the classifier head of rank pooling (rerankers), applied
// to one pooled row, as llama.cpp's build_pooling (LLAMA_POOLING_TYPE_RANK).

#include <cmath>

#include "cria/core/error.h"
#include "cria/model/model.h"

namespace cria::model {

namespace {

// y = W x + b for one row (b empty: none).
void affine(ops::Ops& ops, const Linear& lin, const float* x, int64_t n_in, float* y, int64_t n_out) {
    const auto xv = ops::TensorView::contiguous(ElementType::F32, const_cast<float*>(x), {n_in, 1});
    const auto yv = ops::TensorView::contiguous(ElementType::F32, y, {n_out, 1});
    ops.matmul(lin.w, xv, yv);
    for (int64_t i = 0; i < n_out && !lin.bias.empty(); ++i) y[i] += lin.bias[static_cast<size_t>(i)];
}

}  // namespace

void Model::classify(ops::Ops& ops, const float* x, float* scores) const {
    // llama.cpp's head, every part optional: cls (its bias if any) then tanh;
    // then cls.output (its bias if any); without cls.output the scores are
    // the first n_cls_out values (jina-reranker-v1-tiny-en). A file with only
    // cls.output is BertForSequenceClassification's single-layer head.
    const HParams& hp = hp_;
    const Weights& w = weights_;
    if (!w.cls.present() && !w.cls_out.present())
        throw Error("rank pooling needs a classifier head (cls.weight or cls.output.weight), which this " +
                    hp.arch_name + " model does not have");
    const int64_t E = hp.n_embd;
    std::vector<float> h(x, x + E);
    if (w.cls.present()) {
        affine(ops, w.cls, x, E, h.data(), E);
        for (float& v : h) v = std::tanh(v);
    }
    if (!w.cls_out.present()) {
        std::copy(h.begin(), h.begin() + hp.n_cls_out, scores);
        return;
    }
    affine(ops, w.cls_out, h.data(), E, scores, hp.n_cls_out);
}

}  // namespace cria::model
