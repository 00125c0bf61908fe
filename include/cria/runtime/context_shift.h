#pragma once
// Context shift (llama.cpp's --context-shift, "infinite text generation"):
// when a sequence has filled its context, keep its first n_keep positions,
// drop the n_discard positions after them and move the rest back by
// n_discard, so generation goes on in the freed cells. The moved keys are
// re-rotated by the position delta before the next attention (the KV
// cache's K-shift, memory::KvCache::apply_shift).
//
// As in llama.cpp, the moved tokens keep what they computed with the
// dropped ones in context (their deeper layers' keys and values are not
// recomputed): only their positions change.
//
// Not every memory can do it. A shift is refused (context_shift_refusal)
// for a recurrent state (it holds a whole history and cannot drop a part),
// M-RoPE (llama.cpp refuses too: positions are not one number per token),
// a sliding-window or chunked cache smaller than the context (it has
// already freed keys that the shifted window would see again), an encoder,
// and a pipeline stage that does not hold every layer.

#include <cstdint>
#include <string>

#include "cria/runtime/context.h"

namespace cria::runtime {

// Why ctx cannot shift a sequence of n_ctx_seq positions (0: the whole
// context, one sequence); empty when it can.
std::string context_shift_refusal(const Context& ctx, uint32_t n_ctx_seq = 0);

// Throws cria::Error naming `what` (e.g. "--context-shift") and the reason
// when ctx cannot shift.
void require_context_shift(const Context& ctx, const std::string& what, uint32_t n_ctx_seq = 0);

// The other sequences (bit s: sequence s) whose cells are also cells of
// seq's positions [p0, p1) (a prompt shared by n > 1 choices). Moving such a
// cell would move it for them too, so shift_context refuses it.
uint64_t sequences_sharing(const Context& ctx, SeqId seq, int32_t p0, int32_t p1);

// llama-completion's n_keep: -1 (or more than the prompt) keeps the whole
// prompt; otherwise `keep` tokens after the BOS, which is always kept
// (add_bos: the vocabulary adds one and no --jinja, as llama-completion).
int32_t completion_n_keep(int32_t keep, size_t n_prompt, bool add_bos);

// llama-server's n_keep for a slot of n_ctx positions: the request's
// n_keep (-1: the whole prompt), plus one for the BOS when the vocabulary
// adds one, at most n_ctx - 4.
int32_t server_n_keep(int32_t keep, size_t n_prompt, bool add_bos, int32_t n_ctx);

// How many positions a shift drops: n_discard when given (> 0), else half
// of those after the kept ones, clamped to [0, n_left - 1] so that at least
// one moved token stays (llama-server's rule; llama-completion's n_left / 2
// is the same for n_discard 0).
int32_t discard_count(int32_t n_past, int32_t n_keep, int32_t n_discard = 0);

// Drops positions [n_keep, n_keep + n_discard) of seq and moves
// [n_keep + n_discard, n_past) back by n_discard; returns the new n_past
// (n_past - n_discard). Throws cria::Error, changing nothing, for arguments
// out of range, a memory that refuses (see context_shift_refusal; n_ctx_seq
// as there) or moved cells shared with another sequence.
int32_t shift_context(Context& ctx, SeqId seq, int32_t n_past, int32_t n_keep, int32_t n_discard,
                      uint32_t n_ctx_seq = 0);

}  // namespace cria::runtime
