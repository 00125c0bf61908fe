// The reference encoders' double arithmetic: textbook formulas, one loop
// each, so a mistake in the optimised path cannot hide in a shared kernel.

#include "vision/reference/dmath.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace cria::vision::ref {

Mat linear(const Mat& x, const VisionTensor& w, const VisionTensor* b) {
    const int64_t in = w.ne[0], out = w.ne[1];
    const std::vector<float> wv = w.values();
    Mat y(x.rows, out);
    for (int64_t t = 0; t < x.rows; ++t)
        for (int64_t o = 0; o < out; ++o) {
            double s = b != nullptr ? b->data[static_cast<size_t>(o)] : 0.0;
            for (int64_t i = 0; i < in; ++i) s += x.row(t)[i] * wv[static_cast<size_t>(o * in + i)];
            y.row(t)[o] = s;
        }
    return y;
}

void add_row_vector(Mat& x, const VisionTensor& b) {
    for (int64_t t = 0; t < x.rows; ++t)
        for (int64_t i = 0; i < x.cols; ++i) x.row(t)[i] += b.data[static_cast<size_t>(i)];
}

Mat layer_norm(const Mat& x, const VisionTensor& w, const VisionTensor& b, double eps) {
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < x.cols; ++i) mean += x.row(t)[i];
        mean /= static_cast<double>(x.cols);
        for (int64_t i = 0; i < x.cols; ++i) var += (x.row(t)[i] - mean) * (x.row(t)[i] - mean);
        var /= static_cast<double>(x.cols);
        for (int64_t i = 0; i < x.cols; ++i)
            y.row(t)[i] = (x.row(t)[i] - mean) / std::sqrt(var + eps) * w.data[static_cast<size_t>(i)] +
                          b.data[static_cast<size_t>(i)];
    }
    return y;
}

Mat rms_norm(const Mat& x, const VisionTensor& w, double eps) {
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t) {
        double ms = 0;
        for (int64_t i = 0; i < x.cols; ++i) ms += x.row(t)[i] * x.row(t)[i];
        ms /= static_cast<double>(x.cols);
        for (int64_t i = 0; i < x.cols; ++i) y.row(t)[i] = x.row(t)[i] / std::sqrt(ms + eps) * w.data[static_cast<size_t>(i)];
    }
    return y;
}

void activate(Mat& x, Activation act) {
    for (double& v : x.v) {
        switch (act) {
            case Activation::GeluTanh:
                v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
                break;
            case Activation::GeluQuick: v = v / (1.0 + std::exp(-1.702 * v)); break;
            case Activation::GeluErf: v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); break;
        }
    }
}

Mat patches(const FloatImage& image, const VisionTensor& kernel) {
    const int64_t p = kernel.ne[0], c_out = kernel.ne[3];
    const int64_t gw = image.width / p, gh = image.height / p;
    const std::vector<float> kv = kernel.values();
    Mat y(gw * gh, c_out);
    for (int64_t py = 0; py < gh; ++py)
        for (int64_t px = 0; px < gw; ++px)
            for (int64_t o = 0; o < c_out; ++o) {
                double s = 0;
                for (int64_t c = 0; c < 3; ++c)
                    for (int64_t ky = 0; ky < p; ++ky)
                        for (int64_t kx = 0; kx < p; ++kx)
                            s += static_cast<double>(
                                     image.values[static_cast<size_t>(((py * p + ky) * image.width + px * p + kx) * 3 + c)]) *
                                 kv[static_cast<size_t>(((o * 3 + c) * p + ky) * p + kx)];
                y.row(py * gw + px)[o] = s;
            }
    return y;
}

Mat block(const Mat& x, const Mmproj& m, int64_t il, Activation act, const RotaryRef* rotary, const VisibleFn& visible) {
    const VisionHparams& h = m.hparams();
    const std::string b = "v.blk." + std::to_string(il) + ".";
    auto t = [&](const char* n) -> const VisionTensor& { return m.tensor(b + n); };
    auto o = [&](const char* n) { return m.find(b + n); };
    const int64_t n = x.rows, heads = h.n_head, d = h.head_dim();

    const Mat cur = layer_norm(x, t("ln1.weight"), t("ln1.bias"), h.eps);
    Mat q = linear(cur, t("attn_q.weight"), o("attn_q.bias"));
    Mat k = linear(cur, t("attn_k.weight"), o("attn_k.bias"));
    const Mat v = linear(cur, t("attn_v.weight"), o("attn_v.bias"));
    if (rotary != nullptr)
        for (Mat* mat : {&q, &k})
            for (int64_t tok = 0; tok < n; ++tok)
                for (int64_t hd = 0; hd < heads; ++hd) {
                    double* head = mat->row(tok) + hd * d;
                    for (size_t pr = 0; pr < rotary->a.size(); ++pr) {
                        const double a = rotary->angle(tok, static_cast<int64_t>(pr));
                        const double x0 = head[rotary->a[pr]], x1 = head[rotary->b[pr]];
                        head[rotary->a[pr]] = x0 * std::cos(a) - x1 * std::sin(a);
                        head[rotary->b[pr]] = x0 * std::sin(a) + x1 * std::cos(a);
                    }
                }
    Mat attn(n, h.n_embd);
    std::vector<double> score(static_cast<size_t>(n));
    for (int64_t hd = 0; hd < heads; ++hd)
        for (int64_t i = 0; i < n; ++i) {
            double mx = -INFINITY;
            for (int64_t j = 0; j < n; ++j) {
                if (visible && !visible(i, j)) {
                    score[static_cast<size_t>(j)] = -INFINITY;
                    continue;
                }
                double s = 0;
                for (int64_t e = 0; e < d; ++e) s += q.row(i)[hd * d + e] * k.row(j)[hd * d + e];
                score[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(d));
                mx = std::max(mx, score[static_cast<size_t>(j)]);
            }
            double sum = 0;
            for (double& s : score) {
                s = std::isinf(s) ? 0.0 : std::exp(s - mx);
                sum += s;
            }
            for (int64_t j = 0; j < n; ++j)
                for (int64_t e = 0; e < d; ++e)
                    attn.row(i)[hd * d + e] += score[static_cast<size_t>(j)] / sum * v.row(j)[hd * d + e];
        }
    Mat y = x;
    const Mat out = linear(attn, t("attn_out.weight"), o("attn_out.bias"));
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += out.v[i];
    Mat up = linear(layer_norm(y, t("ln2.weight"), t("ln2.bias"), h.eps), t("ffn_up.weight"), o("ffn_up.bias"));
    activate(up, act);
    const Mat down = linear(up, t("ffn_down.weight"), o("ffn_down.bias"));
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += down.v[i];
    return y;
}

}  // namespace cria::vision::ref
