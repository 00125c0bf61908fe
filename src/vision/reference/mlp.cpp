// LLaVA-1.5 in double, in llama.cpp's token order: class token appended
// last, position row i on element i, output elements 1..N.

#include <algorithm>

#include "vision/reference/families.h"

namespace cria::vision::ref {

ImageEmbeddings mlp(const Mmproj& m, const FloatImage& px) {
    const VisionHparams& h = m.hparams();
    const Mat p = patches(px, m.tensor("v.patch_embd.weight"));
    Mat x(p.rows + 1, h.n_embd);
    std::copy(p.v.begin(), p.v.end(), x.v.begin());
    if (const VisionTensor* bias = m.find("v.patch_embd.bias"))
        for (int64_t t = 0; t < p.rows; ++t)
            for (int64_t i = 0; i < h.n_embd; ++i) x.row(t)[i] += bias->data[static_cast<size_t>(i)];
    const VisionTensor& cls = m.tensor("v.class_embd");
    for (int64_t i = 0; i < h.n_embd; ++i) x.row(p.rows)[i] = cls.data[static_cast<size_t>(i)];
    const VisionTensor& pos = m.tensor("v.position_embd.weight");
    for (size_t i = 0; i < x.v.size(); ++i) x.v[i] += pos.data[i];
    x = layer_norm(x, m.tensor("v.pre_ln.weight"), m.tensor("v.pre_ln.bias"), h.eps);
    for (int64_t il = 0; il < h.n_layer - 1; ++il) x = block(x, m, il, h.activation, nullptr, nullptr);
    Mat kept(p.rows, h.n_embd);
    std::copy(x.v.begin() + h.n_embd, x.v.end(), kept.v.begin());
    Mat hidden = linear(kept, m.tensor("mm.0.weight"), &m.tensor("mm.0.bias"));
    activate(hidden, Activation::GeluTanh);
    const Mat y = linear(hidden, m.tensor("mm.2.weight"), &m.tensor("mm.2.bias"));
    return to_embeddings(y, y.rows, 1);
}

}  // namespace cria::vision::ref
