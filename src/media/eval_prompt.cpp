#include "cria/media/eval_prompt.h"

#include <algorithm>

#include "cria/core/error.h"
#include "cria/media/image_positions.h"

namespace cria::media {

namespace {

// Appends the captured streams of the last decode's outputs 0..n-1.
void append_features(const runtime::Context& ctx, size_t n, std::vector<float>& out) {
    const size_t floats = ctx.params().capture_layers.size() * ctx.model().hparams().n_embd;
    if (n == 0 || floats == 0) return;
    const float* first = ctx.features(0).data();  // consecutive outputs are contiguous
    out.insert(out.end(), first, first + n * floats);
}

}  // namespace

void eval_image_chunk(runtime::Context& ctx, const ImageChunk& image, runtime::SeqId seq, int32_t p0, bool mrope,
                      bool logits_last, std::vector<float>* features) {
    const auto n_embd = static_cast<int32_t>(image.n_embd);
    if (image.n_embd != static_cast<int64_t>(ctx.model().hparams().n_embd))
        throw Error("the image embeddings have " + std::to_string(image.n_embd) + " values per token but the model's width is " +
                    std::to_string(ctx.model().hparams().n_embd));
    // An image attended both ways goes in one batch (one micro-batch, which
    // Context::decode checks); otherwise in batches of n_batch like text.
    const int64_t step = image.non_causal ? image.n_tokens : static_cast<int64_t>(ctx.params().n_batch);
    if (image.non_causal && image.n_tokens > static_cast<int64_t>(std::min(ctx.params().n_batch, ctx.params().n_ubatch)))
        throw Error("an image of " + std::to_string(image.n_tokens) +
                    " tokens is attended both ways and must fit one micro-batch: raise -b and -ub to at least that");
    runtime::Batch b;
    for (int64_t first = 0; first < image.n_tokens; first += step) {
        const int64_t end = std::min(image.n_tokens, first + step);
        b.clear();
        b.set_causal(!image.non_causal);
        for (int64_t i = first; i < end; ++i) {
            const float* row = image.embd.data() + i * image.n_embd;
            const bool out = features || (logits_last && i + 1 == image.n_tokens);
            if (mrope)
                b.add_embedding(row, n_embd, mrope_image_position(p0, i, image.nx), static_cast<int32_t>(i), {seq}, out);
            else
                b.add_embedding(row, n_embd, p0 + static_cast<int32_t>(i), {seq}, out);
        }
        if (ctx.decode(b) != 0) throw Error("no room in the KV cache for the image");
        if (features) append_features(ctx, static_cast<size_t>(end - first), *features);
    }
}

void eval_media_prompt_prefix(runtime::Context& ctx, const MediaPrompt& prompt, runtime::SeqId seq,
                              size_t n_positions, std::vector<float>* features) {
    if (prompt.mrope) throw Error("an M-RoPE prompt's images take fewer positions than tokens: no prefix by position");
    if (n_positions > static_cast<size_t>(prompt.n_positions()))
        throw Error("the prompt has " + std::to_string(prompt.n_positions()) + " positions, not " +
                    std::to_string(n_positions));
    const size_t n_batch = ctx.params().n_batch;
    size_t pos = 0;
    runtime::Batch b;
    for (const PromptChunk& chunk : prompt.chunks) {
        if (pos >= n_positions) break;
        if (chunk.is_image()) {
            const auto n = static_cast<size_t>(chunk.image->n_tokens);
            if (pos + n > n_positions) throw Error("a prompt prefix must not end inside an image");
            eval_image_chunk(ctx, *chunk.image, seq, static_cast<int32_t>(pos), false, pos + n == n_positions,
                             features);
            pos += n;
            continue;
        }
        const size_t n_text = std::min(chunk.tokens.size(), n_positions - pos);
        for (size_t first = 0; first < n_text; first += n_batch) {
            const size_t count = std::min(n_batch, n_text - first);
            b.clear();
            for (size_t i = 0; i < count; ++i) {
                const bool last = pos + first + i + 1 == n_positions;
                b.add(chunk.tokens[first + i], static_cast<int32_t>(pos + first + i), {seq}, features || last);
            }
            if (ctx.decode(b) != 0) throw Error("no room in the KV cache for the prompt");
            if (features) append_features(ctx, count, *features);
        }
        pos += n_text;
    }
}

int32_t eval_media_prompt(runtime::Context& ctx, const MediaPrompt& prompt, runtime::SeqId seq, int32_t n_past,
                          bool logits_last, size_t first_chunk) {
    const size_t n_batch = ctx.params().n_batch;
    for (size_t c = first_chunk; c < prompt.chunks.size(); ++c) {
        const PromptChunk& chunk = prompt.chunks[c];
        const bool last_chunk = c + 1 == prompt.chunks.size();
        if (chunk.is_image()) {
            eval_image_chunk(ctx, *chunk.image, seq, n_past, prompt.mrope, logits_last && last_chunk);
            n_past += image_position_count(*chunk.image, prompt.mrope);
            continue;
        }
        for (size_t first = 0; first < chunk.tokens.size(); first += n_batch) {
            const size_t count = std::min(n_batch, chunk.tokens.size() - first);
            runtime::Batch b;
            for (size_t i = 0; i < count; ++i) {
                const bool out = logits_last && last_chunk && first + i + 1 == chunk.tokens.size();
                b.add(chunk.tokens[first + i], n_past++, {seq}, out);
            }
            if (ctx.decode(b) != 0) throw Error("no room in the KV cache for the prompt");
        }
    }
    return n_past;
}

}  // namespace cria::media
