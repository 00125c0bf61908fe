#pragma once
// Double helpers for the reference encoders: activations are Mat
// (tokens x width, row-major); weights are read as ggml stores them
// (linear ne [in, out]: W[o][i] = data[o * in + i]).

#include <cstdint>
#include <functional>
#include <vector>

#include "cria/vision/mmproj.h"
#include "cria/vision/preprocess.h"

namespace cria::vision::ref {

struct Mat {
    int64_t rows = 0, cols = 0;
    std::vector<double> v;
    Mat() = default;
    Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
    double* row(int64_t r) { return v.data() + r * cols; }
    const double* row(int64_t r) const { return v.data() + r * cols; }
};

Mat linear(const Mat& x, const VisionTensor& w, const VisionTensor* b);
void add_row_vector(Mat& x, const VisionTensor& b);
Mat layer_norm(const Mat& x, const VisionTensor& w, const VisionTensor& b, double eps);
Mat rms_norm(const Mat& x, const VisionTensor& w, double eps);
void activate(Mat& x, Activation act);
// Stride-p convolution without bias, patches in raster order.
Mat patches(const FloatImage& image, const VisionTensor& kernel);

// Rotates pair (a[k], b[k]) of every head of row t by angle(t, k).
using AngleFn = std::function<double(int64_t token, int64_t pair)>;
struct RotaryRef {
    std::vector<int64_t> a, b;
    AngleFn angle;
};
// Which key j a query i may see (null: all).
using VisibleFn = std::function<bool(int64_t query, int64_t key)>;

// Pre-norm block il: x + Attn(LN1 x), then + FFN(LN2 x).
Mat block(const Mat& x, const Mmproj& m, int64_t il, Activation act, const RotaryRef* rotary, const VisibleFn& visible);

}  // namespace cria::vision::ref
