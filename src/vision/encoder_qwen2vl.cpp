// Qwen2-VL ("qwen2vl_merger"): the two temporal slices of the 3-D patch
// kernel applied to the same still image and summed, the patches regrouped
// into 2x2 merge windows, blocks with a 2-D rotary (row on the first quarter
// of the pairs, column on the second, NeoX pairing), post-LN, then each
// window's 4 patches concatenated patch-major -> mm.0 -> tanh-GELU -> mm.2.

#include <cmath>

#include "cria/core/error.h"
#include "vision/encoders.h"
#include "vision/vit.h"

namespace cria::vision::detail {

ImageEmbeddings encode_qwen2vl(const Mmproj& m, const FloatImage& px, ops::Ops& ops) {
    const VisionHparams& h = m.hparams();
    const int64_t p = h.patch_size, c = h.n_embd, d = h.head_dim();
    if (px.width % (2 * p) != 0 || px.height % (2 * p) != 0)
        throw Error("qwen2vl encoder: width and height must be multiples of " + std::to_string(2 * p));
    const int64_t gw = px.width / p, gh = px.height / p, n = gw * gh;
    const Activations a = patch_embedding(ops, px, m.tensor("v.patch_embd.weight"));
    const Activations b = patch_embedding(ops, px, m.tensor("v.patch_embd.weight.1"));
    const VisionTensor* bias = m.find("v.patch_embd.bias");

    Activations x(static_cast<size_t>(n * c));
    std::vector<int64_t> row(static_cast<size_t>(n)), col(static_cast<size_t>(n));
    int64_t t = 0;
    for (int64_t by = 0; by < gh; by += 2)
        for (int64_t bx = 0; bx < gw; bx += 2)
            for (int64_t dy = 0; dy < 2; ++dy)
                for (int64_t dx = 0; dx < 2; ++dx, ++t) {
                    const int64_t src = (by + dy) * gw + bx + dx;
                    for (int64_t i = 0; i < c; ++i)
                        x[static_cast<size_t>(t * c + i)] = a[static_cast<size_t>(src * c + i)] +
                                                            b[static_cast<size_t>(src * c + i)] +
                                                            (bias != nullptr ? bias->data[static_cast<size_t>(i)] : 0.0f);
                    row[static_cast<size_t>(t)] = by + dy;
                    col[static_cast<size_t>(t)] = bx + dx;
                }

    Rotary rotary;
    const int64_t half = d / 2, quarter = d / 4;
    for (int64_t i = 0; i < half; ++i) {
        rotary.first.push_back(static_cast<int32_t>(i));
        rotary.second.push_back(static_cast<int32_t>(i + half));
    }
    rotary.angle.resize(static_cast<size_t>(n * half));
    for (int64_t tok = 0; tok < n; ++tok)
        for (int64_t i = 0; i < half; ++i) {
            const int64_t j = i < quarter ? i : i - quarter;
            const double inv = std::pow(10000.0, -2.0 * static_cast<double>(j) / static_cast<double>(half));
            const auto pos = static_cast<double>(i < quarter ? row[static_cast<size_t>(tok)] : col[static_cast<size_t>(tok)]);
            rotary.angle[static_cast<size_t>(tok * half + i)] = static_cast<float>(pos * inv);
        }

    BlockOptions block;
    VitScratch scratch;  // one set of buffers for every block
    block.scratch = &scratch;
    block.activation = h.activation;
    block.rotary = &rotary;
    for (int64_t il = 0; il < m.n_layer_run(); ++il) vit_block(ops, m, il, x, n, block);
    layer_norm(ops, x, n, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);

    // Consecutive groups of 4 tokens are one merge window: [c, n] read as [4c, n/4].
    const int64_t n_out = n / 4;
    Activations hidden = linear(ops, m.tensor("mm.0.weight"), &m.tensor("mm.0.bias"), x, n_out);
    activate(ops, Activation::GeluTanh, hidden);
    ImageEmbeddings out;
    out.values = linear(ops, m.tensor("mm.2.weight"), &m.tensor("mm.2.bias"), hidden, n_out);
    out.n_tokens = n_out;
    out.n_embd = h.n_output;
    out.grid_x = gw / 2;
    out.grid_y = gh / 2;
    return out;
}

}  // namespace cria::vision::detail
