// Rotary embedding with any pairing and any angle per (token, pair): the
// vision encoders' 2-D rotaries (row and column positions on different
// pairs) are tables of angles, not one position per token.

#include <cmath>

#include "cria/core/error.h"
#include "cria/vision/kernels.h"

namespace cria::vision {

void rotate_pairs(std::span<float> x, int64_t head_dim, int64_t n_heads, int64_t n_tokens,
                  std::span<const int32_t> first, std::span<const int32_t> second, std::span<const float> angle) {
    const auto n_pairs = static_cast<int64_t>(first.size());
    if (static_cast<int64_t>(x.size()) != head_dim * n_heads * n_tokens || second.size() != first.size() ||
        static_cast<int64_t>(angle.size()) != n_pairs * n_tokens)
        throw Error("rotate_pairs: sizes do not match");
    for (int64_t k = 0; k < n_pairs; ++k)
        if (first[k] < 0 || first[k] >= head_dim || second[k] < 0 || second[k] >= head_dim || first[k] == second[k])
            throw Error("rotate_pairs: pair " + std::to_string(k) + " is outside the head");
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t k = 0; k < n_pairs; ++k) {
            const float a = angle[static_cast<size_t>(t * n_pairs + k)];
            const float c = std::cos(a), s = std::sin(a);
            for (int64_t h = 0; h < n_heads; ++h) {
                float* head = x.data() + (t * n_heads + h) * head_dim;
                const float x0 = head[first[k]], x1 = head[second[k]];
                head[first[k]] = x0 * c - x1 * s;
                head[second[k]] = x0 * s + x1 * c;
            }
        }
}

}  // namespace cria::vision
