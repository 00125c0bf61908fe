#pragma once
// Pipeline parallelism at the runtime level: a model's layers are split into
// contiguous ranges, one per process ("stage"; cria/distributed runs one per
// MPI rank), and every Context over such a model decodes in step with the
// contexts of the other stages. The runtime only defines the seam here; it
// knows nothing of how the stages talk.
//
// The root stage (where the tool runs: sampling, grammar, speculation, HTTP)
// calls Context::decode as always. Its stage object sends the batch to the
// others (begin_decode), every stage places the same micro-batches in its own
// memory (each holding only its layers' caches), the residual stream of each
// micro-batch travels stage to stage (send_stream / receive_stream), and the
// last stage sends the output rows (logits, hidden states) back to the root
// (send_outputs / receive_outputs). Target features captured for a drafter
// (Context::set_capture_layers) ride along: each stage fills the capture
// layers it runs into a block sent after the stream, and the last stage
// appends the completed block to its output rows. Memory operations on the root's memory
// reach the other stages through the stage's SequenceObserver, so every
// memory sees the same operations and gives the same answers.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cria/gguf/load_mode.h"
#include "cria/memory/sequence_op.h"
#include "cria/model/model.h"
#include "cria/runtime/batch.h"

namespace cria::runtime {

struct ContextParams;

// One Context's link to the other stages of its pipeline. Buffers passed to
// the send_* / receive_* calls stay alive and unchanged until finish_decode().
class PipelineStage : public memory::SequenceObserver {
public:
    ~PipelineStage() override = default;
    // Whether this is the root: the stage the caller drives, which gets the outputs.
    virtual bool is_root() const = 0;
    // Root: the checked batch, before its first micro-batch (the other stages decode it too).
    virtual void begin_decode(const Batch& batch) = 0;
    // A stage after the first: the stream [n_embd, n] of the next micro-batch.
    virtual void receive_stream(std::span<float> stream) = 0;
    // A stage before the last: hands the stream of a micro-batch on.
    virtual void send_stream(std::span<const float> stream) = 0;
    // The last stage, when it is not the root: a micro-batch's output rows to the root.
    virtual void send_outputs(std::span<const float> outputs) = 0;
    // The root, when it is not the last stage: where a micro-batch's output rows land.
    virtual void receive_outputs(std::span<float> outputs) = 0;
    // Waits until every message of this decode has been sent and received.
    virtual void finish_decode() = 0;
    // Root: every other stage saves its part of sequence seq to its own file
    // beside `path` (path + ".rank<r>") or restores it from there, before the
    // root does its own part. Throws cria::Error naming a stage that failed
    // (then Context::restore_sequence empties the sequence on every stage).
    // The defaults refuse.
    virtual void save_sequence(SeqId seq, const std::string& path);
    // Root: the capture layers of the context changed (Context::set_capture_layers);
    // every other stage captures the ones it runs. The default refuses.
    virtual void set_capture_layers(const std::vector<uint32_t>& layers);
    // Root: the context's LoRA adapters changed (Context::set_lora): every
    // other stage loads the same files (path, user scale; in order) for its
    // own layers and applies them. Throws naming a stage that refused. The
    // default refuses a non-empty list.
    virtual void set_lora(const std::vector<std::pair<std::string, float>>& adapters);
    virtual void restore_sequence(SeqId seq, const std::string& path, uint32_t max_positions);
    // Root: the same in RAM (Context::sequence_state). Every other stage
    // keeps its part of sequence seq under a new id, which is returned;
    // load_kept_state loads those parts back into seq (throws naming a stage
    // that refused, as restore_sequence); drop_kept_state lets them go. The
    // defaults refuse (drop: nothing to drop).
    virtual uint64_t keep_sequence_state(SeqId seq);
    virtual void load_kept_state(SeqId seq, uint64_t id, uint32_t max_positions);
    virtual void drop_kept_state(uint64_t id);
};

// The process's part in a pipeline, installed once by the program (the
// `cria` binary under mpirun) before any model is loaded.
class Pipeline {
public:
    virtual ~Pipeline() = default;
    // Loads this process's stage of the model (the other processes load theirs).
    virtual std::unique_ptr<model::Model> load_model(const std::string& path, gguf::LoadMode mode, bool pack_weights) = 0;
    // The stage a Context over such a model decodes with.
    virtual std::shared_ptr<PipelineStage> make_stage(const model::Model& model, const ContextParams& params) = 0;
};

// Installs (or, with null, removes) the process's pipeline. Not thread-safe:
// call it before anything loads a model.
void install_pipeline(Pipeline* pipeline);
Pipeline* installed_pipeline();

// Loads a model: this process's stage of it when a pipeline is installed,
// all of it otherwise. Tools load the model they serve through this; helper
// models (a draft model) stay whole and local with model::Model::load.
std::unique_ptr<model::Model> load_model(const std::string& path, gguf::LoadMode mode = gguf::LoadMode::Auto,
                                         bool pack_weights = true);

}  // namespace cria::runtime
