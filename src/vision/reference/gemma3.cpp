// Gemma 3 in double: ViT, post-LN, 4x4 mean pool, RMS norm, the input
// projection (which the loader has put in the usual [in, out] layout).

#include "vision/reference/families.h"

namespace cria::vision::ref {

ImageEmbeddings gemma3(const Mmproj& m, const FloatImage& px) {
    const VisionHparams& h = m.hparams();
    const int64_t grid = px.width / h.patch_size;
    Mat x = patches(px, m.tensor("v.patch_embd.weight"));
    add_row_vector(x, m.tensor("v.patch_embd.bias"));
    const VisionTensor& pos = m.tensor("v.position_embd.weight");
    for (size_t i = 0; i < x.v.size(); ++i) x.v[i] += pos.data[i];
    for (int64_t il = 0; il < m.n_layer_run(); ++il) x = block(x, m, il, h.activation, nullptr, nullptr);
    x = layer_norm(x, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);
    const int64_t side = grid / 4;
    Mat pooled(side * side, h.n_embd);
    for (int64_t t = 0; t < grid * grid; ++t) {
        const int64_t out = (t / grid / 4) * side + (t % grid) / 4;
        for (int64_t i = 0; i < h.n_embd; ++i) pooled.row(out)[i] += x.row(t)[i] / 16.0;
    }
    pooled = rms_norm(pooled, m.tensor("mm.soft_emb_norm.weight"), h.eps);
    const Mat y = linear(pooled, m.tensor("mm.input_projection.weight"), nullptr);
    return to_embeddings(y, y.rows, 1);
}

}  // namespace cria::vision::ref
