// Token embedding rows of a draft head's batch, image positions included.

#include "cria/spec/head_inputs.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cria::spec {

void embed_head_inputs(ops::Ops& ops, const ops::TensorView& token_embd, const int32_t* tokens, int64_t n,
                       const float* const* input_rows, const ops::TensorView& out) {
    // An image position looks up row 0 (any valid row), then is overwritten.
    std::vector<int32_t> ids(tokens, tokens + n);
    bool any_image = false;
    for (int32_t& id : ids)
        if (id < 0) id = 0, any_image = true;
    ops.get_rows(token_embd, ids.data(), n, out);
    if (!any_image) return;
    const auto d = static_cast<size_t>(out.ne[0]);
    float* rows = static_cast<float*>(out.data);
    for (int64_t i = 0; i < n; ++i) {
        if (tokens[i] >= 0) continue;
        float* row = rows + static_cast<size_t>(i) * d;
        const float* given = input_rows ? input_rows[i] : nullptr;
        if (given) std::memcpy(row, given, d * sizeof(float));
        else std::fill(row, row + d, 0.0f);
    }
}

}  // namespace cria::spec
