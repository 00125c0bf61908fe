// The names and defaults of the pooling types (context.h), as llama.cpp's
// --pooling and {arch}.pooling_type spell them.

#include "cria/core/error.h"
#include "cria/runtime/context.h"

namespace cria::runtime {

Pooling model_pooling(const model::HParams& hp, Pooling fallback) {
    switch (hp.pooling_type) {  // LLAMA_POOLING_TYPE_*
        case 0: return Pooling::None;
        case 1: return Pooling::Mean;
        case 2: return Pooling::Cls;
        case 3: return Pooling::Last;
        case 4: return Pooling::Rank;
        default: return fallback;
    }
}

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::None: return "none";
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
        case Pooling::Rank: return "rank";
    }
    return "none";
}

Pooling parse_pooling(const std::string& name) {
    for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank})
        if (name == pooling_name(p)) return p;
    throw Error("unknown pooling '" + name + "' (expected none, mean, cls, last or rank)");
}

}  // namespace cria::runtime
