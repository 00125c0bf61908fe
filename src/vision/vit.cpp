// The shared ViT pieces on the op API (matmul, layer_norm, attention, the
// GELUs), so the encoder gets the same optimised kernels as the text models.

#include "vision/vit.h"

#include <cmath>

#include "cria/core/error.h"
#include "cria/vision/kernels.h"

namespace cria::vision::detail {
namespace {

using ops::TensorView;

TensorView view(const float* data, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    return TensorView::contiguous(ElementType::F32, data, {ne0, ne1, ne2});
}

// Non-causal attention of n tokens over themselves, one head at a time as
// two matrix products and a softmax: scores = K^T Q (scaled), probabilities
// by row, out = V P. An image has thousands of tokens that all see each
// other, so this runs on the tiled matmul kernels; the op API's attention
// visits keys per query (right for decoding, several times slower here).
// q, k, v, out: [d, heads, n].
void attend_all(ops::Ops& ops, const float* q, const float* k, const float* v, float* out, int64_t d, int64_t heads,
                int64_t n, VitScratch& s) {
    std::vector<float>&qh = s.qh, &kh = s.kh, &vt = s.vt, &oh = s.oh, &scores = s.scores;
    for (auto* b : {&qh, &kh, &vt, &oh}) b->resize(static_cast<size_t>(d * n));
    scores.resize(static_cast<size_t>(n * n));
    ops::SoftmaxParams sp;
    sp.scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int64_t h = 0; h < heads; ++h) {
        for (int64_t t = 0; t < n; ++t)
            for (int64_t e = 0; e < d; ++e) {
                const size_t src = static_cast<size_t>((t * heads + h) * d + e);
                qh[static_cast<size_t>(t * d + e)] = q[src];
                kh[static_cast<size_t>(t * d + e)] = k[src];
                vt[static_cast<size_t>(e * n + t)] = v[src];  // V transposed: row e holds value e of every key
            }
        // scores[t][j] = k_j . q_t: K is the weight ([d, n_keys]), Q the input.
        ops.matmul(view(kh.data(), d, n), view(qh.data(), d, n), view(scores.data(), n, n));
        ops.softmax(view(scores.data(), n, n), sp, view(scores.data(), n, n));
        // out[t][e] = sum_j p[t][j] v_j[e]: V^T is the weight ([n_keys, d]).
        ops.matmul(view(vt.data(), n, d), view(scores.data(), n, n), view(oh.data(), d, n));
        for (int64_t t = 0; t < n; ++t)
            for (int64_t e = 0; e < d; ++e) out[(t * heads + h) * d + e] = oh[static_cast<size_t>(t * d + e)];
    }
}

}  // namespace

void linear_into(ops::Ops& ops, const VisionTensor& w, const VisionTensor* b, const Activations& x, int64_t n,
                 Activations& y) {
    const int64_t in = w.ne[0], out = w.ne[1];
    if (static_cast<int64_t>(x.size()) != in * n) throw Error("vision linear: input width does not match the weight");
    y.resize(static_cast<size_t>(out * n));
    ops.matmul(w.matrix(), view(x.data(), in, n), view(y.data(), out, n));
    if (b != nullptr) ops.add(view(y.data(), out, n), view(b->ptr(), out, 1), view(y.data(), out, n));
}

Activations linear(ops::Ops& ops, const VisionTensor& w, const VisionTensor* b, const Activations& x, int64_t n) {
    Activations y;
    linear_into(ops, w, b, x, n, y);
    return y;
}

void layer_norm(ops::Ops& ops, Activations& x, int64_t n, const VisionTensor& w, const VisionTensor& b, float eps) {
    const int64_t c = w.ne[0];
    ops.layer_norm(view(x.data(), c, n), w.ptr(), b.ptr(), eps, view(x.data(), c, n));
}

void activate(ops::Ops& ops, Activation act, Activations& x) {
    const TensorView v = view(x.data(), static_cast<int64_t>(x.size()), 1);
    switch (act) {
        case Activation::GeluTanh: ops.gelu(v, v); break;
        case Activation::GeluErf: ops.gelu_erf(v, v); break;
        case Activation::GeluQuick: gelu_quick(x); break;
    }
}

Activations patch_embedding(ops::Ops& ops, const FloatImage& image, const VisionTensor& kernel) {
    const int64_t p = kernel.ne[0];
    if (image.width % p != 0 || image.height % p != 0)
        throw Error("vision encoder: image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                    " is not a whole number of " + std::to_string(p) + "-pixel patches");
    const Activations cols = image_patch_columns(image.values, image.width, image.height, p);
    const int64_t n = (image.width / p) * (image.height / p);
    const int64_t width = kernel.ne[3];
    Activations y(static_cast<size_t>(width * n));
    // The kernel [p, p, 3, C] is, read flat, the matrix [p*p*3, C].
    ops.matmul(TensorView::contiguous(kernel.type, kernel.raw(), {p * p * 3, width}), view(cols.data(), p * p * 3, n),
               view(y.data(), width, n));
    return y;
}

void vit_block(ops::Ops& ops, const Mmproj& m, int64_t il, Activations& x, int64_t n, const BlockOptions& options) {
    const VisionHparams& h = m.hparams();
    const int64_t c = h.n_embd, d = h.head_dim(), heads = h.n_head;
    const std::string b = "v.blk." + std::to_string(il) + ".";
    auto t = [&](const char* name) -> const VisionTensor& { return m.tensor(b + name); };
    auto opt = [&](const char* name) { return m.find(b + name); };

    VitScratch own;
    VitScratch& s = options.scratch != nullptr ? *options.scratch : own;
    Activations &cur = s.cur, &q = s.q, &k = s.k, &v = s.v, &attn = s.attn, &o = s.o, &up = s.up, &down = s.down;
    cur = x;  // copy assignment keeps cur's storage
    layer_norm(ops, cur, n, t("ln1.weight"), t("ln1.bias"), h.eps);
    linear_into(ops, t("attn_q.weight"), opt("attn_q.bias"), cur, n, q);
    linear_into(ops, t("attn_k.weight"), opt("attn_k.bias"), cur, n, k);
    linear_into(ops, t("attn_v.weight"), opt("attn_v.bias"), cur, n, v);
    if (options.rotary != nullptr) {
        const Rotary& r = *options.rotary;
        rotate_pairs(q, d, heads, n, r.first, r.second, r.angle);
        rotate_pairs(k, d, heads, n, r.first, r.second, r.angle);
    }
    attn.resize(static_cast<size_t>(c * n));
    // Block-diagonal attention is attention inside each window on its own.
    std::vector<int64_t> windows = options.windows;
    if (windows.empty()) windows.push_back(n);
    int64_t start = 0;
    for (int64_t len : windows) {
        if (len < 1 || start + len > n) throw Error("vision encoder: attention windows do not cover the tokens");
        attend_all(ops, q.data() + start * c, k.data() + start * c, v.data() + start * c, attn.data() + start * c, d,
                   heads, len, s);
        start += len;
    }
    if (start != n) throw Error("vision encoder: attention windows do not cover the tokens");
    linear_into(ops, t("attn_out.weight"), opt("attn_out.bias"), attn, n, o);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];

    cur = x;
    layer_norm(ops, cur, n, t("ln2.weight"), t("ln2.bias"), h.eps);
    linear_into(ops, t("ffn_up.weight"), opt("ffn_up.bias"), cur, n, up);
    activate(ops, options.activation, up);
    linear_into(ops, t("ffn_down.weight"), opt("ffn_down.bias"), up, n, down);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
}

}  // namespace cria::vision::detail
