// Muse-Glimmer in double, in raster order throughout: the window attention
// is a visibility rule (same g x g window) instead of a reordering, which
// checks the optimised encoder's regrouping independently.

#include <algorithm>
#include <cmath>

#include "vision/reference/families.h"

namespace cria::vision::ref {

ImageEmbeddings muse_glimmer(const Mmproj& m, const FloatImage& px) {
    const VisionHparams& h = m.hparams();
    const int64_t gw = px.width / h.patch_size, gh = px.height / h.patch_size, c = h.n_embd, d = h.head_dim();
    Mat x = patches(px, m.tensor("v.patch_embd.weight"));
    add_row_vector(x, m.tensor("v.patch_embd.bias"));
    const VisionTensor& table = m.tensor("v.position_embd.weight");
    const auto g = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(table.ne[1]))));
    auto src_coord = [&](int64_t i, int64_t out_n, int64_t& i0, int64_t& i1, double& w) {
        const double f = (static_cast<double>(i) + 0.5) * static_cast<double>(g) / static_cast<double>(out_n) - 0.5;
        const auto fl = static_cast<int64_t>(std::floor(f));
        i0 = std::clamp<int64_t>(fl, 0, g - 1);
        i1 = std::clamp<int64_t>(fl + 1, 0, g - 1);
        w = std::clamp(f - static_cast<double>(i0), 0.0, 1.0);
    };
    for (int64_t y = 0; y < gh; ++y)
        for (int64_t xx = 0; xx < gw; ++xx) {
            int64_t y0, y1, x0, x1;
            double wy, wx;
            src_coord(y, gh, y0, y1, wy);
            src_coord(xx, gw, x0, x1, wx);
            for (int64_t i = 0; i < c; ++i) {
                auto at = [&](int64_t r, int64_t q) { return static_cast<double>(table.data[static_cast<size_t>((r * g + q) * c + i)]); };
                x.row(y * gw + xx)[i] += at(y0, x0) * (1 - wx) * (1 - wy) + at(y0, x1) * wx * (1 - wy) +
                                         at(y1, x0) * (1 - wx) * wy + at(y1, x1) * wx * wy;
            }
        }
    RotaryRef rot;
    const int64_t half = d / 2;
    for (int64_t part = 0; part < 2; ++part)
        for (int64_t i = 0; i < half / 2; ++i) {
            rot.a.push_back(part * half + 2 * i);
            rot.b.push_back(part * half + 2 * i + 1);
        }
    rot.angle = [&](int64_t t, int64_t k) {
        const int64_t i = k % (half / 2);
        const double pos = k < half / 2 ? static_cast<double>(t % gw + 1) : static_cast<double>(t / gw + 1);
        return pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(half));
    };
    const VisibleFn same_window = [&](int64_t i, int64_t j) {
        return (i / gw) / g == (j / gw) / g && (i % gw) / g == (j % gw) / g;
    };
    x = layer_norm(x, m.tensor("v.pre_ln.weight"), m.tensor("v.pre_ln.bias"), h.eps);
    for (int64_t il = 0; il < h.n_layer; ++il) {
        const bool global = il == h.n_layer - 1 || (il + 1) % 4 == 0;
        x = block(x, m, il, Activation::GeluErf, &rot, global ? VisibleFn{} : same_window);
    }
    x = layer_norm(x, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);
    const int64_t ow = gw / 2, oh = gh / 2;
    Mat merged(ow * oh, 4 * c);
    for (int64_t t = 0; t < gw * gh; ++t) {
        const int64_t y = t / gw, xx = t % gw, out = (y / 2) * ow + xx / 2, s = (y % 2) * 2 + xx % 2;
        for (int64_t i = 0; i < c; ++i) merged.row(out)[i * 4 + s] = x.row(t)[i];
    }
    Mat h1 = linear(merged, m.tensor("mm.0.weight"), nullptr);
    activate(h1, Activation::GeluErf);
    Mat h2 = linear(h1, m.tensor("mm.1.weight"), nullptr);
    activate(h2, Activation::GeluErf);
    const Mat y = linear(h2, m.tensor("mm.2.weight"), nullptr);
    return to_embeddings(y, ow, oh);
}

}  // namespace cria::vision::ref
