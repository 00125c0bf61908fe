#pragma once
// One function per projector family (encoder_<family>.cpp); encode_image
// picks by the file's projector type.

#include "cria/vision/encoder.h"

namespace cria::vision::detail {

ImageEmbeddings encode_gemma3(const Mmproj& m, const FloatImage& px, ops::Ops& ops);
ImageEmbeddings encode_mlp(const Mmproj& m, const FloatImage& px, ops::Ops& ops);
ImageEmbeddings encode_qwen2vl(const Mmproj& m, const FloatImage& px, ops::Ops& ops);
ImageEmbeddings encode_muse_glimmer(const Mmproj& m, const FloatImage& px, ops::Ops& ops);

}  // namespace cria::vision::detail
