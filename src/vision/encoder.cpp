// The projector family decides the encoder; the image must be one the
// preprocessor could have produced for it.

#include "cria/vision/encoder.h"

#include "cria/core/error.h"
#include "vision/encoders.h"

namespace cria::vision {

ImageEmbeddings encode_image(const Mmproj& m, const FloatImage& px, ops::Ops& ops) {
    if (px.width < 1 || px.height < 1 || static_cast<int64_t>(px.values.size()) != px.width * px.height * 3)
        throw Error("encode_image: the pixel buffer does not match its size");
    switch (m.hparams().projector) {
        case ProjectorType::Gemma3: return detail::encode_gemma3(m, px, ops);
        case ProjectorType::Mlp: return detail::encode_mlp(m, px, ops);
        case ProjectorType::Qwen2vlMerger: return detail::encode_qwen2vl(m, px, ops);
        case ProjectorType::MuseGlimmer: return detail::encode_muse_glimmer(m, px, ops);
    }
    throw Error("encode_image: unknown projector");
}

}  // namespace cria::vision
