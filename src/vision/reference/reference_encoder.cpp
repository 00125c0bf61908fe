// Dispatch of the float64 reference encoders by projector family.

#include "cria/vision/reference_encoder.h"

#include "cria/core/error.h"
#include "vision/reference/families.h"

namespace cria::vision {

namespace ref {

ImageEmbeddings to_embeddings(const Mat& y, int64_t grid_x, int64_t grid_y) {
    ImageEmbeddings e;
    e.n_tokens = y.rows;
    e.n_embd = y.cols;
    e.grid_x = grid_x;
    e.grid_y = grid_y;
    e.values.assign(y.v.begin(), y.v.end());
    return e;
}

}  // namespace ref

ImageEmbeddings reference_encode_image(const Mmproj& m, const FloatImage& px) {
    const int64_t p = m.hparams().patch_size;
    if (px.width % p != 0 || px.height % p != 0 || static_cast<int64_t>(px.values.size()) != px.width * px.height * 3)
        throw Error("reference encoder: the image is not a whole number of patches");
    switch (m.hparams().projector) {
        case ProjectorType::Gemma3: return ref::gemma3(m, px);
        case ProjectorType::Mlp: return ref::mlp(m, px);
        case ProjectorType::Qwen2vlMerger: return ref::qwen2vl(m, px);
        case ProjectorType::MuseGlimmer: return ref::muse_glimmer(m, px);
    }
    throw Error("reference encoder: unknown projector");
}

}  // namespace cria::vision
