#include "model/sequence_runs.h"

#include <bit>
#include <string>

#include "cria/core/error.h"

namespace cria::model {

std::vector<SequenceRun> sequence_runs(const ForwardInput& in) {
    if (in.seq_masks == nullptr) throw Error("forward: a recurrent layer needs every token's sequence (seq_masks)");
    std::vector<SequenceRun> runs;
    for (int64_t i = 0; i < in.n_tokens; ++i) {
        const uint64_t m = in.seq_masks[i];
        if (std::popcount(m) != 1)
            throw Error("forward: token " + std::to_string(i) +
                        " of the micro-batch must belong to exactly one sequence (recurrent layers keep one state "
                        "per sequence)");
        const auto seq = static_cast<int32_t>(std::countr_zero(m));
        if (!runs.empty() && runs.back().seq == seq && runs.back().first + runs.back().n == i)
            ++runs.back().n;
        else
            runs.push_back({seq, i, 1});
    }
    return runs;
}

}  // namespace cria::model
