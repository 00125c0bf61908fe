#pragma once
// A Context runs a model over batches: it owns the KV cache(s), the thread
// pool and the op backend, the activation workspace and the output buffers.
//
//   auto model = model::Model::load("m.gguf");
//   runtime::Context ctx(*model, {});
//   ctx.decode(runtime::Batch::from_tokens(prompt, 0));
//   auto logits = ctx.logits(-1);
//
// decode() splits a batch into micro-batches of n_ubatch tokens, places each
// in the cache, and runs the forward pass; logits (and embeddings) of the
// flagged tokens are kept until the next decode(). The memory is a
// memory::HybridMemory router over the model's memories: one KV cache, or,
// for models with sliding-window layers, as llama.cpp's iSWA cache, a full
// one for the global layers and a small one holding only the window for the
// SWA layers. The memory decides how a batch is cut into micro-batches.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/cpu/thread_pool.h"
#include "cria/memory/hybrid_memory.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/ops/cpu_ops.h"
#include "cria/runtime/batch.h"
#include "cria/runtime/saved_media.h"
#include "cria/runtime/pipeline.h"

namespace cria::runtime {

// How decode() pools each sequence's hidden states (llama.cpp's pooling
// types): none, their mean, the last token's, the first token's (CLS), or
// the first token's through the classifier head (Rank: rerankers, n_cls_out
// scores per sequence).
enum class Pooling { None, Mean, Last, Cls, Rank };
// The pooling a model's file asks for ({arch}.pooling_type), or `fallback`
// when it names none (decoders, unspecified).
Pooling model_pooling(const model::HParams& hp, Pooling fallback);
// "none", "mean", "cls", "last", "rank" (llama.cpp's --pooling values);
// parse_pooling throws cria::Error naming the valid ones for anything else.
const char* pooling_name(Pooling p);
Pooling parse_pooling(const std::string& name);

struct ContextParams {
    uint32_t n_ctx = 4096;     // cache cells; 0: the model's training context
    uint32_t n_batch = 2048;   // most tokens one decode() call accepts
    uint32_t n_ubatch = 512;   // tokens per forward pass
    uint32_t n_seq_max = 1;    // sequences (1..64)
    int n_threads = 0;         // <= 0: one per hardware thread
    ElementType type_k = ElementType::F16;
    ElementType type_v = ElementType::F16;
    bool embeddings = false;   // keep the final hidden states
    Pooling pooling = Pooling::None;
    // Layers whose entering residual stream is kept for every output (n_layer:
    // the stream after the last layer), for drafters that read the target's
    // hidden state. Captured during decode(), read with features().
    std::vector<uint32_t> capture_layers;
    // The link to the other stages when the model holds only some of the
    // layers (cria/runtime/pipeline.h). Null: the installed pipeline makes
    // one for such a model; a whole model needs none. The context keeps it
    // for itself: Context::params() returns it null.
    std::shared_ptr<PipelineStage> stage;
};

struct Timings {
    double prompt_ms = 0;  // decode() calls with more than one token
    int64_t prompt_tokens = 0;
    double eval_ms = 0;    // decode() calls with one token
    int64_t eval_tokens = 0;
};

class Context final : private model::AttentionMemory {
public:
    Context(const model::Model& model, const ContextParams& params);
    // Over a memory built by the caller (one layer map entry per model layer;
    // attention layers need a KV cache). For memories the runtime does not
    // build itself yet, and for tests. Throws cria::Error for another layer count.
    Context(const model::Model& model, const ContextParams& params, std::unique_ptr<memory::HybridMemory> memory);
    ~Context() override;

    // 0 on success; 1 when the cache has no room for the batch (nothing was
    // kept of the batch then). Throws cria::Error for an invalid batch.
    int decode(const Batch& batch);

    // Logits of batch entry i of the last decode() (it must have been flagged);
    // i < 0 counts from the last output.
    std::span<const float> logits(int32_t i) const;
    // Final hidden state of batch entry i (embeddings on, pooling none).
    std::span<const float> embeddings(int32_t i) const;
    // Pooled embedding of a sequence of the last decode() (pooling not none).
    std::span<const float> embeddings_seq(SeqId seq) const;
    // The captured residual streams of batch entry i of the last decode()
    // (it must have been flagged): params.capture_layers.size() rows of
    // n_embd floats, in the order of capture_layers. A view into the
    // context's buffer (valid until the next decode()), not a copy.
    std::span<const float> features(int32_t i) const;
    // Changes which layers later decode() calls capture (a drafter that
    // reads target features was chosen after the context was made).
    // Throws cria::Error for a layer beyond the model.
    void set_capture_layers(std::vector<uint32_t> layers);

    // The memory, as llama.cpp's llama_memory_* (applied to every memory of
    // the model). The mutating ones return false, changing nothing, when a
    // memory cannot do it (a recurrent state cannot drop part of its history).
    void memory_clear();
    bool memory_seq_rm(SeqId seq, int32_t p0, int32_t p1);
    bool memory_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1);
    bool memory_seq_keep(SeqId seq);
    bool memory_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta);
    int32_t memory_seq_pos_max(SeqId seq) const;
    int32_t memory_seq_pos_min(SeqId seq) const;
    size_t memory_bytes() const;
    // The memory itself: checkpoints for speculative verification
    // (checkpoint_begin / checkpoint_commit), the layer -> memory map.
    memory::HybridMemory& memory() { return *memory_; }
    const memory::HybridMemory& memory() const { return *memory_; }

    // One sequence's state in a file (llama.cpp's llama_state_seq_save_file /
    // _load_file): one section per memory (for a KV cache the sequence's
    // cells -- positions and the raw K and V rows of every layer) with `tokens` (what the caller knows those
    // cells hold), under a versioned header naming the model (its file name
    // and content fingerprint, layers, K/V widths, cache types, vocabulary, a
    // hash of the hyperparameters) and a
    // checksum. Written to a temporary file, then renamed. Returns the
    // number of positions saved (of the first memory: the full cache). Throws cria::Error when the file cannot be written.
    // media: the runs of `tokens` that are no vocabulary ids but embeddings
    // (images), recorded with their position range and content hash, so a
    // restore tells which images the cells hold.
    size_t save_sequence(SeqId seq, std::span<const TokenId> tokens, const std::string& path,
                         std::span<const SavedMedia> media = {});
    // Loads such a file into `seq`, replacing what it held, without any
    // forward pass; returns the saved tokens. Throws cria::Error, leaving the
    // cache unchanged, when the file is not one, has another version, comes
    // from another model or cache type, is truncated or corrupt, or does not
    // fit this context. max_positions > 0 also refuses files with more
    // tokens or a cell position beyond it (a per-sequence limit). A file with
    // media is refused unless `media` is given to receive them. A model
    // split over pipeline stages (runtime/pipeline.h) keeps one file per
    // stage (path, path + ".rank1", ...); a restore that one stage refuses
    // leaves the sequence empty on every stage instead of unchanged.
    std::vector<TokenId> restore_sequence(SeqId seq, const std::string& path, uint32_t max_positions = 0,
                                          std::vector<SavedMedia>* media = nullptr);
    // The same state as bytes in memory (the server's prompt cache keeps
    // them): sequence_state() is the file's image (n_positions: as
    // save_sequence returns), load_sequence_state() checks and loads one as
    // restore_sequence does. The most bytes such an image may have here:
    // max_sequence_state_bytes(). For a model split over pipeline stages,
    // each other stage keeps its own part in its RAM under an id that the
    // root's bytes carry (a part per stage, as the files); loading reaches
    // every stage (one that refuses leaves the sequence empty on all), and
    // drop_sequence_state() lets the other stages' parts go once the bytes
    // are no longer kept (it does nothing for a model in one piece).
    std::vector<uint8_t> sequence_state(SeqId seq, std::span<const TokenId> tokens,
                                        std::span<const SavedMedia> media = {}, size_t* n_positions = nullptr);
    std::vector<TokenId> load_sequence_state(SeqId seq, std::span<const uint8_t> bytes, uint32_t max_positions = 0,
                                             std::vector<SavedMedia>* media = nullptr);
    void drop_sequence_state(std::span<const uint8_t> bytes);
    uint64_t max_sequence_state_bytes() const;

    // LoRA adapters applied from the next decode() on (model/lora.h; an
    // empty set: the base model). The adapters must outlive their use here.
    // A later decode() throws cria::Error when an adapted layer is one this
    // architecture's forward pass never reaches (instead of ignoring it).
    void set_lora(model::LoraSet adapters);
    // The rows of sequence `seq` apply `adapters` instead of set_lora's set
    // from the next decode() on (clear_sequence_lora: set_lora's again), and
    // its saved states name them. A micro-batch whose rows are all under one
    // set runs as before; one mixing sets computes every base product once
    // and each adapter's delta over the rows that apply it
    // (model::LoraRows). A batch entry of several sequences under different
    // sets is refused by decode(). Not across pipeline stages (throws).
    void set_sequence_lora(SeqId seq, model::LoraSet adapters);
    void clear_sequence_lora(SeqId seq);
    // Whether set_sequence_lora is available (not a pipeline stage).
    bool mixes_lora_sets() const { return stage_ == nullptr; }

    const model::Model& model() const { return model_; }
    const ContextParams& params() const { return params_; }
    uint32_t n_ctx() const { return params_.n_ctx; }
    int n_threads() const { return pool_.size(); }
    ops::Ops& ops() { return ops_; }
    Timings& timings() { return timings_; }

private:
    void attend(uint32_t layer, const ops::TensorView& q, const ops::TensorView& k, const ops::TensorView& v,
                const ops::AttentionParams& params, const ops::TensorView& out) override;
    // A recurrent layer's state, through the layer's slot in the router.
    model::RecurrentState recurrent_state(uint32_t layer, SeqId seq) override;
    void record_position(uint32_t layer, SeqId seq, int32_t pos) override;
    bool keeps_every_position(uint32_t layer, SeqId seq) override;
    // Micro-batch u of the split: placed, then run. 1 when the memory has no room.
    size_t feature_floats() const;  // captured floats per output
    int decode_ubatch(const Batch& batch, const memory::Split& split, size_t u);
    // Gathers the entries of a regrouped micro-batch into the ub_* scratch.
    void gather_ubatch(const Batch& batch, const memory::Split& split, int64_t first, int64_t n);
    // Re-rotates the keys of shifted cells (before attention, and before a save).
    void apply_pending_shifts();
    // restore_sequence of this process's own memory (a pipeline's root asks the other stages first).
    std::vector<TokenId> restore_own_sequence(SeqId seq, const std::string& path, uint32_t max_positions,
                                              std::vector<SavedMedia>* media);
    // The forward pass of a micro-batch as one stage of a pipeline (the
    // model holds some of the layers): the stream in from the previous
    // stage, out to the next, the last stage's output rows to the root.
    void forward_stage(model::ForwardInput& in, const memory::Split& split, int64_t first);
    // Root: copies the output rows the last stage sent into their rows.
    void place_stage_outputs();
    // Throws unless every adapted layer of the micro-batch's sets (ub_lora_sets_)
    // was reached (after a forward pass with logits); then they are known good.
    void check_lora_reached();
    // The set of sequence `seq`'s rows (its own, else lora_).
    const model::LoraSet& lora_for(SeqId seq) const;
    // Picks the micro-batch's adapters: `in.adapters` when its rows share
    // one set, else `in.lora_rows` with each row's set; sets lora_checking_.
    void select_lora(model::ForwardInput& in, const uint64_t* seq_masks, int64_t n);
    // gguf::content_fingerprint of the model's file, computed on first use.
    uint64_t model_fingerprint();
    // sequence_state / load_sequence_state of this process's own memory.
    std::vector<uint8_t> encode_sequence_state(SeqId seq, std::span<const TokenId> tokens,
                                               std::span<const SavedMedia> media, size_t* n_positions);
    std::vector<TokenId> decode_sequence_state(SeqId seq, std::span<const uint8_t> bytes, uint32_t max_positions,
                                               std::vector<SavedMedia>* media);

    const model::Model& model_;
    ContextParams params_;
    cpu::ThreadPool pool_;
    ops::CpuOps ops_;
    model::Workspace ws_;
    std::unique_ptr<memory::HybridMemory> memory_;

    // Per-ubatch scratch (no allocation once sized).
    std::vector<int32_t> out_rows_;
    // A regrouped micro-batch (Split::in_order false): its entries gathered,
    // and its outputs computed here before they go to their rows.
    std::vector<TokenId> ub_tokens_;
    std::vector<float> ub_embd_, ub_logits_, ub_hidden_, ub_features_;
    std::vector<int32_t> ub_pos_, ub_orders_;
    std::vector<uint64_t> ub_masks_;
    std::vector<int32_t> ub_rope_;  // M-RoPE positions of the micro-batch, [section][token]

    // Pipeline stage (params_.stage): each micro-batch's stream and output
    // rows in flight during one decode(), and where the root's output rows go.
    std::shared_ptr<PipelineStage> owned_stage_;
    PipelineStage* stage_ = nullptr;
    std::vector<float> stream_in_;
    std::vector<std::vector<float>> in_flight_;
    struct StageOutputs {
        std::vector<int32_t> rows;  // output row of each received row
        std::vector<float> data;    // logits of every row, then hidden states of every row
    };
    std::vector<StageOutputs> stage_outputs_;

    // Outputs of the last decode().
    std::vector<float> logits_, embd_, pooled_, features_;
    std::vector<int32_t> output_index_;  // batch entry -> output row, -1 when not flagged
    int32_t n_outputs_ = 0;
    std::vector<int32_t> pooled_index_;  // seq -> row in pooled_, -1 when absent
    Timings timings_;
    uint64_t model_fingerprint_ = 0;
    bool fingerprint_known_ = false;
    model::LoraSet lora_;
    // Sequences' own sets (set_sequence_lora), by sequence id; how many are set.
    std::vector<std::unique_ptr<model::LoraSet>> seq_lora_;
    size_t n_seq_lora_ = 0;
    // The current micro-batch's distinct sets and each row's index into them,
    // and the table of a mixed micro-batch (rebuilt when its sets change).
    std::vector<const model::LoraSet*> ub_lora_sets_, lora_rows_sets_;
    std::vector<uint8_t> ub_lora_row_set_;
    model::LoraRows lora_rows_;
    // The adapted layers a forward pass reached, while a set in it is not yet
    // known good (its identity not in lora_verified_): lora_checking_.
    std::vector<const model::Linear*> lora_reached_;
    std::vector<uint64_t> lora_verified_;
    bool lora_checking_ = false;
};

}  // namespace cria::runtime
