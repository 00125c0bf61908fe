// CLIP's "quick GELU", x * sigmoid(1.702 x): the op API has the tanh and erf
// forms only.

#include <cmath>

#include "cria/vision/kernels.h"

namespace cria::vision {

void gelu_quick(std::span<float> x) {
    for (float& v : x) v = v / (1.0f + std::exp(-1.702f * v));
}

}  // namespace cria::vision
