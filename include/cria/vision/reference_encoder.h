#pragma once
// The float64 reference of every vision encoder: the same computation as
// encode_image written plainly in double (no op API, no SIMD), one function
// per family in src/vision/reference/. Tests compare the optimised encoder
// with it on synthetic projectors, and it with llama.cpp's embeddings.

#include "cria/vision/encoder.h"

namespace cria::vision {

ImageEmbeddings reference_encode_image(const Mmproj& mmproj, const FloatImage& pixels);

}  // namespace cria::vision
