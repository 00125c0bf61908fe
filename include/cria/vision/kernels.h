#pragma once
// The vision encoder's own kernels, for what the op API has no call for.
// They know nothing of models: image patches, rotations of value pairs, an
// activation. Each has a float64 reference in the tests.

#include <cstdint>
#include <span>
#include <vector>

namespace cria::vision {

// The columns of a stride-`patch` convolution without padding ("im2col"):
// from an interleaved RGB float image (width x height), one column of
// patch*patch*3 values per patch, patches in raster order; inside a column
// value (kx, ky, c) sits at kx + patch * (ky + patch * c), the layout of a
// ggml conv kernel [patch, patch, 3, C]. So `kernel^T x columns` is the
// convolution. Pixels beyond the last whole patch are not read.
std::vector<float> image_patch_columns(std::span<const float> image, int64_t width, int64_t height, int64_t patch);

// Rotates value pairs of every head of every token in place:
// x is [head_dim, n_heads, n_tokens]; pair k is (first[k], second[k]) of each
// head, rotated by angle[t * n_pairs + k] (x0' = x0 cos - x1 sin,
// x1' = x0 sin + x1 cos), the same for all heads of token t.
void rotate_pairs(std::span<float> x, int64_t head_dim, int64_t n_heads, int64_t n_tokens,
                  std::span<const int32_t> first, std::span<const int32_t> second, std::span<const float> angle);

// x * sigmoid(1.702 x), in place ("quick GELU", CLIP's activation).
void gelu_quick(std::span<float> x);

}  // namespace cria::vision
