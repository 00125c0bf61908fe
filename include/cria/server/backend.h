#pragma once
// What the server needs from a model: a vocabulary, and decode() over a
// batch whose tokens belong to several independent sequences (one per slot).
//
// The scheduler is written against this interface only, so that it does not
// care whether the tokens go to the KV-cached runtime or to the slow
// reference forward pass (which recomputes every sequence and is used when
// no faster backend is available, and in tests).
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cria/media/image_chunk.h"
#include "cria/runtime/saved_media.h"
#include "cria/spec/drafter.h"
#include "cria/spec/params.h"
#include "cria/spec/step.h"
#include "cria/vocab/vocab.h"

namespace cria::server {

using vocab::TokenId;

struct BatchToken {
    TokenId token = 0;
    int32_t pos = 0;     // position inside its sequence
    int32_t seq = 0;     // sequence (= slot) id
    bool logits = false; // return the logit row predicting the next token
};

// A Backend is the target's memory of each slot's speculative step
// (spec::TargetMemory): checkpoint_begin(seq, n) before the decode of a
// verify batch of n positions, checkpoint_commit(seq, a) after it keeps the
// first a of them (memory::Memory's checkpoint semantics).
class Backend : public spec::TargetMemory {
public:
    virtual ~Backend() = default;

    virtual const vocab::Vocab& vocab() const = 0;
    virtual int32_t n_vocab() const = 0;
    // Positions each sequence may hold.
    virtual int32_t n_ctx_per_seq() const = 0;
    // The text model rotates with M-RoPE: an image then takes fewer
    // positions than tokens (media/image_positions.h), and decode_image
    // gives its tokens their grid positions.
    virtual bool mrope() const { return false; }
    // Most tokens one decode() takes.
    virtual int32_t max_batch() const = 0;
    // Model description for /v1/models and /props.
    virtual std::string model_name() const = 0;
    // The GGUF's tokenizer.chat_template, or "" when the file has none.
    virtual std::string chat_template() const = 0;

    // Evaluates the batch. Every sequence's tokens must continue it at the
    // position after its last kept token. `logits` receives n_vocab values
    // for each token with logits = true, in batch order.
    virtual void decode(std::span<const BatchToken> batch, std::vector<float>& logits) = 0;
    // Forgets positions >= keep of a sequence. Returns false, changing
    // nothing, when the memory cannot drop part of a history (a recurrent
    // state); keep = 0 (clear the sequence) always succeeds.
    virtual bool seq_keep_prefix(int32_t seq, int32_t keep) = 0;
    // Makes `dst` hold the first n positions of `src` by sharing its cells
    // (no evaluation): n > 1 choices of one prompt evaluate it once. False,
    // leaving dst empty, when the memory cannot (the default; a recurrent
    // state holds more than the prefix).
    virtual bool seq_copy_prefix(int32_t src, int32_t dst, int32_t n);
    // Context shift (llama-server's --context-shift, runtime/context_shift.h):
    // why a sequence cannot be shifted, empty when it can (the default
    // refuses); the other sequences (bit s: sequence s) sharing the cells of
    // seq's positions [p0, p1); and the shift itself, which drops positions
    // [n_keep, n_keep + n_discard) of seq and moves [n_keep + n_discard,
    // n_past) back by n_discard, or throws cria::Error changing nothing.
    virtual std::string context_shift_refusal() const;
    virtual uint64_t seq_sharing(int32_t seq, int32_t p0, int32_t p1) const;
    virtual void seq_shift(int32_t seq, int32_t n_past, int32_t n_keep, int32_t n_discard);
    // Evaluates an image's embeddings into `seq` at positions pos.. (one per
    // image token), continuing it like decode(). With `features`, the
    // captured streams (set_capture_layers) of every image token are
    // appended to it, token by token (drafters that read the target's
    // features are seeded from the image rows too). Throws cria::Error (the
    // default: the backend takes no images).
    virtual void decode_image(int32_t seq, int32_t pos, const media::ImageChunk& image,
                              std::vector<float>* features = nullptr);
    // Checkpoints of a verify batch (see above); false, changing nothing,
    // when refused (begin: one is open; commit: none is, or n_accepted is
    // more than was decoded since begin).
    bool checkpoint_begin(int32_t seq, int32_t n_positions) override = 0;
    bool checkpoint_commit(int32_t seq, int32_t n_accepted) override = 0;

    // Slot files: a sequence's cached state with the tokens it holds
    // (positions 0..n-1). save_sequence() returns the number of tokens
    // saved; restore_sequence() replaces the sequence without evaluating
    // anything and returns its tokens. Both throw cria::Error (the default:
    // the backend keeps no state to save); a refused restore leaves the
    // sequence as it was.
    virtual size_t save_sequence(int32_t seq, std::span<const TokenId> tokens, const std::string& path);
    virtual std::vector<TokenId> restore_sequence(int32_t seq, const std::string& path);
    // The same with the images among the tokens (runtime::SavedMedia: their
    // placeholder runs, positions and hashes). The defaults save only a
    // sequence without images and restore only a file without them.
    virtual size_t save_sequence_with_media(int32_t seq, std::span<const TokenId> tokens, const std::string& path,
                                            std::span<const runtime::SavedMedia> media);
    virtual std::vector<TokenId> restore_sequence_with_media(int32_t seq, const std::string& path,
                                                             std::vector<runtime::SavedMedia>& media);
    // The same state as bytes in memory (the prompt cache): what a slot file
    // would hold, and loading such bytes back. Same errors and guarantees.
    virtual std::vector<uint8_t> sequence_state(int32_t seq, std::span<const TokenId> tokens);
    virtual std::vector<TokenId> load_sequence_state(int32_t seq, std::span<const uint8_t> state);
    // Such bytes (or snapshot_sequence's) are no longer kept: a model split
    // over pipeline ranks lets the other ranks' parts go. The default: nothing.
    virtual void drop_sequence_state(std::span<const uint8_t> /*state*/) {}

    // LoRA adapters loaded with the model (--lora, --lora-scaled): their
    // files and the scales in force, in load order (llama-server's ids).
    // set_lora_scales() sets every adapter's scale, one value per adapter;
    // the caller makes sure no cached state outlives the old scales. The
    // default backend has none and refuses any list but an empty one.
    struct LoraAdapterInfo {
        std::string path;
        float scale = 0.0f;
    };
    virtual std::vector<LoraAdapterInfo> lora_adapters() const { return {}; }
    virtual void set_lora_scales(const std::vector<float>& scales);
    // Whether decode() can mix sequences under different scales in one
    // batch: set_sequence_lora_scales() then gives sequence `seq` its own
    // scales (one per adapter) for what it computes, saves and loads, and
    // set_lora_scales() no longer matters to it. The default backend cannot
    // (the scheduler then decodes each set of scales in a batch of its own).
    virtual bool mixes_lora_scales() const { return false; }
    virtual void set_sequence_lora_scales(int32_t seq, const std::vector<float>& scales);

    // Turn checkpoints (server/state_checkpoints.h) for a memory that cannot
    // drop a suffix (recurrent states): true when the scheduler should keep
    // them (the default: false, a KV cache reuses any prefix in place).
    // snapshot_sequence() is save_sequence() into memory;
    // restore_snapshot() loads such bytes into seq and returns their tokens.
    // Both throw cria::Error (the default: no state to snapshot); a refused
    // restore leaves the sequence as it was.
    virtual bool wants_turn_checkpoints() const { return false; }
    virtual std::vector<uint8_t> snapshot_sequence(int32_t seq, std::span<const TokenId> tokens);
    virtual std::vector<TokenId> restore_snapshot(int32_t seq, std::span<const uint8_t> state);

    // The drafters `params` asks for, for one slot (each slot calls it once).
    // Throws cria::Error (the default: the backend cannot draft).
    virtual std::vector<std::unique_ptr<spec::Drafter>> make_drafters(const spec::SpecParams& params);

    // Target features for drafters that read the target's hidden state
    // (spec::Drafter::target_feature_layers): later decode() calls capture
    // the residual stream entering these layers. features() views the
    // streams of `n_rows` consecutive logit rows of the last decode(), from
    // `first_row`, as the rows of a sequence starting at position pos0 (valid
    // until the next decode()). The default backend captures nothing:
    // set_capture_layers() throws for a non-empty list.
    virtual void set_capture_layers(const std::vector<uint32_t>& layers);
    virtual spec::FeaturesView features(size_t first_row, size_t n_rows, int32_t pos0) const;

    // The most tokens embed() takes (longer inputs are the request's fault: 400).
    virtual int32_t max_embedding_tokens() const { return INT32_MAX; }
    // The pooled (the model's pooling, or the server's --pooling; mean for
    // decoders) embedding of a text's tokens, not normalised (the server
    // applies the request's embd_normalize). Backends that cannot produce
    // hidden states throw cria::Error.
    virtual std::vector<float> embed(std::span<const TokenId> tokens) = 0;
    // llama-server's non-OpenAI /embeddings: one row per token under pooling
    // none (never normalised, as llama-server), else the one pooled row (the
    // default: embed()).
    virtual std::vector<std::vector<float>> embed_rows(std::span<const TokenId> tokens) { return {embed(tokens)}; }
    // Whether embed_rows() gives a row per token (pooling none).
    virtual bool embeds_per_token() const { return false; }
    // Whether the model generates text (an encoder only embeds and ranks:
    // the server answers completions with 501 then).
    virtual bool generates_text() const { return true; }
    // A reranker's relevance score of each document for the query (raw
    // classifier outputs, llama-server's relevance_score); n_tokens receives
    // the tokens scored. Backends without a reranker throw cria::Error (the default).
    virtual std::vector<float> rerank(const std::string& query, const std::vector<std::string>& documents,
                                      int64_t& n_tokens);
};

}  // namespace cria::server
