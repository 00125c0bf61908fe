// Muse-Glimmer (Onyx's vision tower): patch embedding + bias + the g x g
// position table resized bilinearly to the patch grid, the sequence
// regrouped by g x g windows, pre-LN, blocks with a 2-D rotary (column on the
// first half of each head, row on the second, adjacent pairs, 1-based) where
// only every 4th block and the last attend globally (the others inside their
// window), post-LN, back to raster order, 2x2 pixel shuffle channel-major,
// then a 3-layer MLP with erf-GELU and no biases.

#include <algorithm>
#include <cmath>

#include "cria/core/error.h"
#include "vision/encoders.h"
#include "vision/vit.h"

namespace cria::vision::detail {
namespace {

struct Tap {
    int64_t i0 = 0, i1 = 0;
    double w = 0.0;  // weight of i1
};

// torch.nn.functional.interpolate(bilinear, align_corners=False, no
// antialias) along one axis: source coordinate (i + 0.5) * in / out - 0.5.
std::vector<Tap> interpolation_taps(int64_t out_n, int64_t in_n) {
    std::vector<Tap> taps(static_cast<size_t>(out_n));
    const double s = static_cast<double>(out_n) / static_cast<double>(in_n);
    for (int64_t i = 0; i < out_n; ++i) {
        const double f = (static_cast<double>(i) + 0.5) / s - 0.5;
        const auto i0 = static_cast<int64_t>(std::floor(f));
        Tap& t = taps[static_cast<size_t>(i)];
        t.i0 = std::clamp<int64_t>(i0, 0, in_n - 1);
        t.i1 = std::clamp<int64_t>(i0 + 1, 0, in_n - 1);
        t.w = std::clamp(f - static_cast<double>(t.i0), 0.0, 1.0);
    }
    return taps;
}

}  // namespace

ImageEmbeddings encode_muse_glimmer(const Mmproj& m, const FloatImage& px, ops::Ops& ops) {
    const VisionHparams& h = m.hparams();
    const int64_t p = h.patch_size, c = h.n_embd, d = h.head_dim();
    if (px.width % (2 * p) != 0 || px.height % (2 * p) != 0)
        throw Error("muse-glimmer encoder: width and height must be multiples of " + std::to_string(2 * p));
    const int64_t gw = px.width / p, gh = px.height / p, n = gw * gh;
    Activations raster = patch_embedding(ops, px, m.tensor("v.patch_embd.weight"));
    const float* bias = m.tensor("v.patch_embd.bias").ptr();

    // Positions: the table [g*g rows of c], resized to gh x gw when needed.
    const VisionTensor& table = m.tensor("v.position_embd.weight");
    const auto g = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(table.ne[1]))));
    const auto ty = interpolation_taps(gh, g), tx = interpolation_taps(gw, g);
    for (int64_t y = 0; y < gh; ++y)
        for (int64_t x = 0; x < gw; ++x) {
            const Tap& a = ty[static_cast<size_t>(y)];
            const Tap& b = tx[static_cast<size_t>(x)];
            const bool exact = gh == g && gw == g;
            for (int64_t i = 0; i < c; ++i) {
                auto at = [&](int64_t r, int64_t q) { return static_cast<double>(table.data[static_cast<size_t>((r * g + q) * c + i)]); };
                const double v = exact ? at(y, x)
                                       : at(a.i0, b.i0) * (1 - b.w) * (1 - a.w) + at(a.i0, b.i1) * b.w * (1 - a.w) +
                                             at(a.i1, b.i0) * (1 - b.w) * a.w + at(a.i1, b.i1) * b.w * a.w;
                raster[static_cast<size_t>((y * gw + x) * c + i)] += bias[i] + static_cast<float>(v);
            }
        }

    // Window order: g x g windows in raster order, patches inside in raster
    // order, partial windows at the right and bottom edges.
    std::vector<int64_t> order;
    std::vector<int64_t> windows;
    for (int64_t wy = 0; wy < gh; wy += g)
        for (int64_t wx = 0; wx < gw; wx += g) {
            int64_t count = 0;
            for (int64_t y = wy; y < std::min(wy + g, gh); ++y)
                for (int64_t x = wx; x < std::min(wx + g, gw); ++x, ++count) order.push_back(y * gw + x);
            windows.push_back(count);
        }
    Activations x(static_cast<size_t>(n * c));
    for (int64_t t = 0; t < n; ++t)
        std::copy_n(raster.begin() + order[static_cast<size_t>(t)] * c, c, x.begin() + t * c);

    Rotary rotary;
    const int64_t half = d / 2, pairs_per_half = half / 2;
    for (int64_t part = 0; part < 2; ++part)
        for (int64_t i = 0; i < pairs_per_half; ++i) {
            rotary.first.push_back(static_cast<int32_t>(part * half + 2 * i));
            rotary.second.push_back(static_cast<int32_t>(part * half + 2 * i + 1));
        }
    const int64_t n_pairs = 2 * pairs_per_half;
    rotary.angle.resize(static_cast<size_t>(n * n_pairs));
    for (int64_t t = 0; t < n; ++t) {
        const int64_t src = order[static_cast<size_t>(t)];
        const auto col = static_cast<double>(src % gw + 1), row = static_cast<double>(src / gw + 1);
        for (int64_t i = 0; i < pairs_per_half; ++i) {
            const double inv = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(half));
            rotary.angle[static_cast<size_t>(t * n_pairs + i)] = static_cast<float>(col * inv);
            rotary.angle[static_cast<size_t>(t * n_pairs + pairs_per_half + i)] = static_cast<float>(row * inv);
        }
    }

    layer_norm(ops, x, n, m.tensor("v.pre_ln.weight"), m.tensor("v.pre_ln.bias"), h.eps);
    const int64_t n_layer = m.n_layer_run();
    VitScratch scratch;  // one set of buffers for every block
    for (int64_t il = 0; il < n_layer; ++il) {
        BlockOptions block;
        block.scratch = &scratch;
        block.activation = Activation::GeluErf;
        block.rotary = &rotary;
        const bool global = il == n_layer - 1 || (il + 1) % 4 == 0;
        if (!global) block.windows = windows;
        vit_block(ops, m, il, x, n, block);
    }
    layer_norm(ops, x, n, m.tensor("v.post_ln.weight"), m.tensor("v.post_ln.bias"), h.eps);

    // Back to raster order, then 2x2 pixel shuffle: feature c * 4 + s with s = 2 ry + rx.
    for (int64_t t = 0; t < n; ++t)
        std::copy_n(x.begin() + t * c, c, raster.begin() + order[static_cast<size_t>(t)] * c);
    const int64_t ow = gw / 2, oh = gh / 2, n_out = ow * oh;
    Activations merged(static_cast<size_t>(n_out * 4 * c));
    for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
            for (int64_t ry = 0; ry < 2; ++ry)
                for (int64_t rx = 0; rx < 2; ++rx) {
                    const float* src = raster.data() + ((2 * oy + ry) * gw + 2 * ox + rx) * c;
                    float* dst = merged.data() + (oy * ow + ox) * 4 * c;
                    for (int64_t i = 0; i < c; ++i) dst[i * 4 + ry * 2 + rx] = src[i];
                }
    Activations h1 = linear(ops, m.tensor("mm.0.weight"), nullptr, merged, n_out);
    activate(ops, Activation::GeluErf, h1);
    Activations h2 = linear(ops, m.tensor("mm.1.weight"), nullptr, h1, n_out);
    activate(ops, Activation::GeluErf, h2);
    ImageEmbeddings out;
    out.values = linear(ops, m.tensor("mm.2.weight"), nullptr, h2, n_out);
    out.n_tokens = n_out;
    out.n_embd = h.n_output;
    out.grid_x = ow;
    out.grid_y = oh;
    return out;
}

}  // namespace cria::vision::detail
