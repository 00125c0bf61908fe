// Gemma 3: SigLIP ViT (patch embedding + bias + learned positions, blocks,
// post-LN), then the 4x4 average pool over the patch grid, RMS norm with
// mm.soft_emb_norm and mm.input_projection.

#include <cmath>

#include "cria/core/error.h"
#include "vision/encoders.h"
#include "vision/vit.h"

namespace cria::vision::detail {

ImageEmbeddings encode_gemma3(const Mmproj& m, const FloatImage& px, ops::Ops& ops) {
    const VisionHparams& h = m.hparams();
    if (px.width != h.image_size || px.height != h.image_size)
        throw Error("gemma3 encoder: the image must be " + std::to_string(h.image_size) + "x" +
                    std::to_string(h.image_size));
    const int64_t c = h.n_embd, grid = h.image_size / h.patch_size, n = grid * grid;
    Activations x = patch_embedding(ops, px, m.tensor("v.patch_embd.weight"));
    const float* bias = m.tensor("v.patch_embd.bias").ptr();
    const float* pos = m.tensor("v.position_embd.weight").ptr();
    for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < c; ++i) x[static_cast<size_t>(t * c + i)] += bias[i] + pos[t * c + i];
    BlockOptions block;
    VitScratch scratch;  // one set of buffers for every block
    block.scratch = &scratch;
    block.activation = h.activation;
    for (int64_t il = 0; il < m.n_layer_run(); ++il) vit_block(ops, m, il, x, n, block);
    layer_norm(ops, x, n, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);

    constexpr int64_t kPool = 4;
    const int64_t side = grid / kPool, n_out = side * side;
    Activations pooled(static_cast<size_t>(n_out * c), 0.0f);
    for (int64_t oy = 0; oy < side; ++oy)
        for (int64_t ox = 0; ox < side; ++ox) {
            float* dst = pooled.data() + (oy * side + ox) * c;
            for (int64_t ky = 0; ky < kPool; ++ky)
                for (int64_t kx = 0; kx < kPool; ++kx) {
                    const float* src = x.data() + ((oy * kPool + ky) * grid + ox * kPool + kx) * c;
                    for (int64_t i = 0; i < c; ++i) dst[i] += src[i];
                }
            for (int64_t i = 0; i < c; ++i) dst[i] /= static_cast<float>(kPool * kPool);
        }
    const VisionTensor& norm = m.tensor("mm.soft_emb_norm.weight");
    ops.rms_norm(ops::TensorView::contiguous(ElementType::F32, pooled.data(), {c, n_out}), norm.ptr(), h.eps,
                 ops::TensorView::contiguous(ElementType::F32, pooled.data(), {c, n_out}));

    // mm.input_projection was put in the [in, out] layout by the loader.
    const VisionTensor& proj = m.tensor("mm.input_projection.weight");
    ImageEmbeddings out;
    out.values = linear(ops, proj, nullptr, pooled, n_out);
    out.n_tokens = n_out;
    out.n_embd = proj.ne[1];
    out.grid_x = n_out;
    out.grid_y = 1;
    return out;
}

}  // namespace cria::vision::detail
