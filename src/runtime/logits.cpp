#include "cria/runtime/logits.h"

#include <algorithm>
#include <string>

#include "cria/core/error.h"
#include "cria/runtime/context.h"

namespace cria::runtime {

std::vector<std::vector<float>> sequence_logits(const model::Model& model, std::span<const TokenId> tokens,
                                                const LogitsParams& params) {
    if (tokens.empty()) throw Error("logits: no tokens given");
    const size_t n = tokens.size();
    const size_t prefill = params.prefill == 0 || params.prefill > n ? n : params.prefill;
    ContextParams cp;
    cp.n_ctx = params.n_ctx;
    cp.n_threads = params.n_threads;
    cp.type_k = params.type_k;
    cp.type_v = params.type_v;
    // The prefill is one decode call and one micro-batch, as in the reference run.
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(std::max<size_t>(prefill, 1));
    Context ctx(model, cp);
    if (params.lora) ctx.set_lora(*params.lora);
    if (n > ctx.n_ctx())
        throw Error("logits: " + std::to_string(n) + " tokens do not fit the context of " +
                    std::to_string(ctx.n_ctx()));

    std::vector<std::vector<float>> rows;
    rows.reserve(n);
    const auto keep = [&](int32_t i) {
        const std::span<const float> l = ctx.logits(i);
        rows.emplace_back(l.begin(), l.end());
    };
    Batch batch;
    for (size_t i = 0; i < prefill; ++i) batch.add(tokens[i], static_cast<int32_t>(i), {0}, true);
    if (ctx.decode(batch) != 0) throw Error("logits: the context has no room for the prefill");
    for (size_t i = 0; i < prefill; ++i) keep(static_cast<int32_t>(i));
    for (size_t i = prefill; i < n; ++i) {
        batch.clear();
        batch.add(tokens[i], static_cast<int32_t>(i), {0}, true);
        if (ctx.decode(batch) != 0) throw Error("logits: the context has no room for token " + std::to_string(i));
        keep(0);
    }
    return rows;
}

double nmse(const std::vector<std::vector<float>>& ref, const std::vector<std::vector<float>>& got) {
    if (ref.size() != got.size()) throw Error("nmse: " + std::to_string(ref.size()) + " rows against " +
                                              std::to_string(got.size()));
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        if (ref[i].size() != got[i].size())
            throw Error("nmse: row " + std::to_string(i) + " has " + std::to_string(ref[i].size()) + " values against " +
                        std::to_string(got[i].size()));
        for (size_t j = 0; j < ref[i].size(); ++j) {
            const double d = static_cast<double>(ref[i][j]) - got[i][j];
            err += d * d;
            norm += static_cast<double>(ref[i][j]) * ref[i][j];
        }
    }
    return norm > 0 ? err / norm : (err > 0 ? 1.0 : 0.0);
}

}  // namespace cria::runtime
