#pragma once
// One float64 reference per projector family (reference/<family>.cpp).

#include "cria/vision/reference_encoder.h"
#include "vision/reference/dmath.h"

namespace cria::vision::ref {

// The embeddings as ImageEmbeddings (rounded to float at the very end).
ImageEmbeddings to_embeddings(const Mat& y, int64_t grid_x, int64_t grid_y);

ImageEmbeddings gemma3(const Mmproj& m, const FloatImage& px);
ImageEmbeddings mlp(const Mmproj& m, const FloatImage& px);
ImageEmbeddings qwen2vl(const Mmproj& m, const FloatImage& px);
ImageEmbeddings muse_glimmer(const Mmproj& m, const FloatImage& px);

}  // namespace cria::vision::ref
