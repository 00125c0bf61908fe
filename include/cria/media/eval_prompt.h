#pragma once
// Decodes a media prompt into one sequence of a Context (llama.cpp's
// mtmd_helper_eval_chunks): text in batches of n_batch tokens, each image
// as embedding batches at its positions (M-RoPE sections for M-RoPE text
// models; gemma3's image as one batch attended both ways).

#include <cstdint>
#include <vector>

#include "cria/media/media_prompt.h"
#include "cria/runtime/context.h"

namespace cria::media {

// Decodes chunks [first_chunk, end) from position n_past; the last token
// gets logits when logits_last. Returns the position after the prompt.
// Throws cria::Error when the cache has no room or an image does not fit
// the batch limits (an image attended both ways needs n_ubatch >= its tokens).
int32_t eval_media_prompt(runtime::Context& ctx, const MediaPrompt& prompt, runtime::SeqId seq, int32_t n_past,
                          bool logits_last, size_t first_chunk = 0);

// Decodes one image chunk at p0 (no logits unless `logits_last`). With
// `features`, every image token is an output and its captured streams
// (Context::features: the layers drafters read) are appended, token by token.
void eval_image_chunk(runtime::Context& ctx, const ImageChunk& image, runtime::SeqId seq, int32_t p0, bool mrope,
                      bool logits_last, std::vector<float>* features = nullptr);

// Decodes the first n_positions positions of a prompt whose images take one
// position per token (no M-RoPE) into `seq` from position 0, the last with
// logits; with `features` every position is an output and its captured
// streams are appended in position order (what speculative decoding's
// feature-reading drafters take in). Throws cria::Error for an M-RoPE prompt
// or an n_positions beyond the prompt.
void eval_media_prompt_prefix(runtime::Context& ctx, const MediaPrompt& prompt, runtime::SeqId seq,
                              size_t n_positions, std::vector<float>* features);

}  // namespace cria::media
