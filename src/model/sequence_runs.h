#pragma once
// The runs of one sequence inside a micro-batch, for recurrent layers: a
// recurrent layer advances one state per sequence, token after token, so it
// walks the micro-batch as maximal runs of consecutive tokens of the same
// sequence. (A recurrent memory splits batches so that each micro-batch is
// one such run -- memory::split_by_sequence -- but the layer does not rely on
// it: any order of whole-token runs gives the same states.)

#include <cstdint>
#include <vector>

#include "cria/model/model.h"

namespace cria::model {

struct SequenceRun {
    int32_t seq = 0;     // the sequence id
    int64_t first = 0;   // index of the run's first token in the micro-batch
    int64_t n = 0;       // tokens in the run
};

// The runs of `in`, in micro-batch order. Throws cria::Error when seq_masks
// is missing or a token belongs to no sequence or to several (a recurrent
// state cannot be shared by two sequences inside one step).
std::vector<SequenceRun> sequence_runs(const ForwardInput& in);

}  // namespace cria::model
