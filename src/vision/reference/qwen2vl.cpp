// Qwen2-VL in double: both temporal conv slices, 2x2 window order, 2-D
// rotary (row on pairs i < d/4, column on the rest, pairs (i, i + d/2)),
// post-LN, patch-major merge, mm.0 -> tanh-GELU -> mm.2.

#include <cmath>

#include "vision/reference/families.h"

namespace cria::vision::ref {

ImageEmbeddings qwen2vl(const Mmproj& m, const FloatImage& px) {
    const VisionHparams& h = m.hparams();
    const int64_t gw = px.width / h.patch_size, gh = px.height / h.patch_size, c = h.n_embd, d = h.head_dim();
    const Mat a = patches(px, m.tensor("v.patch_embd.weight"));
    const Mat b = patches(px, m.tensor("v.patch_embd.weight.1"));
    Mat x(gw * gh, c);
    std::vector<int64_t> row, col;
    for (int64_t by = 0; by < gh; by += 2)
        for (int64_t bx = 0; bx < gw; bx += 2)
            for (int64_t dy = 0; dy < 2; ++dy)
                for (int64_t dx = 0; dx < 2; ++dx) {
                    const int64_t src = (by + dy) * gw + bx + dx, t = static_cast<int64_t>(row.size());
                    for (int64_t i = 0; i < c; ++i) x.row(t)[i] = a.row(src)[i] + b.row(src)[i];
                    row.push_back(by + dy);
                    col.push_back(bx + dx);
                }
    if (const VisionTensor* bias = m.find("v.patch_embd.bias")) add_row_vector(x, *bias);
    RotaryRef rot;
    for (int64_t i = 0; i < d / 2; ++i) {
        rot.a.push_back(i);
        rot.b.push_back(i + d / 2);
    }
    rot.angle = [&](int64_t t, int64_t i) {
        const int64_t q = d / 4;
        const double pos = static_cast<double>(i < q ? row[static_cast<size_t>(t)] : col[static_cast<size_t>(t)]);
        return pos * std::pow(10000.0, -2.0 * static_cast<double>(i % q) / static_cast<double>(d / 2));
    };
    for (int64_t il = 0; il < m.n_layer_run(); ++il) x = block(x, m, il, h.activation, &rot, nullptr);
    x = layer_norm(x, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);
    Mat merged(x.rows / 4, 4 * c);
    merged.v = x.v;  // 4 consecutive window patches, patch-major
    Mat hidden = linear(merged, m.tensor("mm.0.weight"), &m.tensor("mm.0.bias"));
    activate(hidden, Activation::GeluTanh);
    const Mat y = linear(hidden, m.tensor("mm.2.weight"), &m.tensor("mm.2.bias"));
    return to_embeddings(y, gw / 2, gh / 2);
}

}  // namespace cria::vision::ref
