// LLaVA-1.5 ("mlp") as llama.cpp build 10470 runs it: the class embedding
// is appended after the patches (sequence patch 0..N-1, class), position row
// i is added to element i, pre-LN, all blocks but the last stored one, and
// the output is sequence elements 1..N (patch 0 dropped, class token last),
// then mm.0 -> tanh-GELU -> mm.2. This differs from Hugging Face's order on
// purpose: llama.cpp's embeddings are the reference.

#include "cria/core/error.h"
#include "vision/encoders.h"
#include "vision/vit.h"

namespace cria::vision::detail {

ImageEmbeddings encode_mlp(const Mmproj& m, const FloatImage& px, ops::Ops& ops) {
    const VisionHparams& h = m.hparams();
    if (px.width != h.image_size || px.height != h.image_size)
        throw Error("mlp encoder: the image must be " + std::to_string(h.image_size) + "x" +
                    std::to_string(h.image_size));
    const int64_t c = h.n_embd, grid = h.image_size / h.patch_size, n_patches = grid * grid, n = n_patches + 1;
    Activations x = patch_embedding(ops, px, m.tensor("v.patch_embd.weight"));
    if (const VisionTensor* bias = m.find("v.patch_embd.bias"))
        for (int64_t t = 0; t < n_patches; ++t)
            for (int64_t i = 0; i < c; ++i) x[static_cast<size_t>(t * c + i)] += bias->data[static_cast<size_t>(i)];
    const VisionTensor& cls = m.tensor("v.class_embd");
    x.insert(x.end(), cls.data.begin(), cls.data.end());
    const float* pos = m.tensor("v.position_embd.weight").ptr();
    for (int64_t i = 0; i < n * c; ++i) x[static_cast<size_t>(i)] += pos[i];
    layer_norm(ops, x, n, m.tensor("v.pre_ln.weight"), m.tensor("v.pre_ln.bias"), h.eps);
    BlockOptions block;
    VitScratch scratch;  // one set of buffers for every block
    block.scratch = &scratch;
    block.activation = h.activation;
    for (int64_t il = 0; il < m.n_layer_run(); ++il) vit_block(ops, m, il, x, n, block);

    const Activations kept(x.begin() + c, x.end());  // sequence elements 1..N
    Activations hidden = linear(ops, m.tensor("mm.0.weight"), &m.tensor("mm.0.bias"), kept, n_patches);
    activate(ops, Activation::GeluTanh, hidden);
    ImageEmbeddings out;
    out.values = linear(ops, m.tensor("mm.2.weight"), &m.tensor("mm.2.bias"), hidden, n_patches);
    out.n_tokens = n_patches;
    out.n_embd = h.n_output;
    out.grid_x = n_patches;
    out.grid_y = 1;
    return out;
}

}  // namespace cria::vision::detail
