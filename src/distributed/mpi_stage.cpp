// A Context's pipeline stage over MPI (mpi_stage.h).

#include "distributed/mpi_stage.h"

#include "cria/distributed/mpi_pipeline.h"
#include "distributed/wire.h"

namespace cria::distributed {

MpiStage::MpiStage(const World& world, int32_t context_id, RootPipeline* pipeline)
    : world_(world), context_id_(context_id), pipeline_(pipeline) {}

MpiStage::~MpiStage() {
    if (!pending_.empty()) world_.wait_all(pending_, "closing a context");
    if (decoding_.owns_lock()) decoding_.unlock();
    if (pipeline_ != nullptr) {
        Writer w;
        w.value(Command::DestroyContext).value(context_id_);
        const std::lock_guard<std::mutex> lock(pipeline_->mutex());
        pipeline_->broadcast(w.bytes(), false);
    }
}

void MpiStage::begin_decode(const runtime::Batch& batch) {
    decoding_ = std::unique_lock<std::mutex>(pipeline_->mutex());
    Writer w;
    w.value(Command::Decode).value(context_id_);
    w.value(batch.n_embd());
    w.array(std::span<const int32_t>(batch.tokens()));
    w.array(std::span<const float>(batch.embeddings()));
    w.array(std::span<const int32_t>(batch.positions()));
    w.array(std::span<const uint64_t>(batch.seq_masks()));
    w.array(std::span<const uint8_t>(batch.outputs()));
    pipeline_->broadcast(w.bytes(), false);
}

void MpiStage::receive_stream(std::span<float> stream) {
    World::Pending p = world_.receive(world_.rank() - 1, Tag::Stream, std::as_writable_bytes(stream));
    world_.wait(p, "waiting for the previous stage's hidden states");
}

void MpiStage::send_stream(std::span<const float> stream) {
    pending_.push_back(world_.send(world_.rank() + 1, Tag::Stream, std::as_bytes(stream)));
}

void MpiStage::send_outputs(std::span<const float> outputs) {
    pending_.push_back(world_.send(0, Tag::Outputs, std::as_bytes(outputs)));
}

void MpiStage::receive_outputs(std::span<float> outputs) {
    pending_.push_back(world_.receive(world_.size() - 1, Tag::Outputs, std::as_writable_bytes(outputs)));
}

void MpiStage::finish_decode() {
    world_.wait_all(pending_, "decoding across ranks");
    if (decoding_.owns_lock()) decoding_.unlock();
}

void MpiStage::applied(const memory::SequenceOp& op) {
    Writer w;
    w.value(Command::MemoryOp).value(context_id_).value(op);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), false);
}

void MpiStage::set_capture_layers(const std::vector<uint32_t>& layers) {
    Writer w;
    w.value(Command::SetCapture).value(context_id_).array(std::span<const uint32_t>(layers));
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), false);
}

uint64_t MpiStage::keep_sequence_state(runtime::SeqId seq) {
    const uint64_t id = next_kept_++;
    Writer w;
    w.value(Command::KeepState).value(context_id_).value(seq).value(id);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    try {
        pipeline_->broadcast(w.bytes(), true, 5.0);
    } catch (...) {
        // The ranks that did keep their part let it go.
        Writer drop;
        drop.value(Command::DropKeptState).value(context_id_).value(id);
        pipeline_->broadcast(drop.bytes(), false);
        throw;
    }
    return id;
}

void MpiStage::load_kept_state(runtime::SeqId seq, uint64_t id, uint32_t max_positions) {
    Writer w;
    w.value(Command::LoadKeptState).value(context_id_).value(seq).value(id).value(max_positions);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), true, 5.0);
}

void MpiStage::drop_kept_state(uint64_t id) {
    Writer w;
    w.value(Command::DropKeptState).value(context_id_).value(id);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), false);
}

void MpiStage::set_lora(const std::vector<std::pair<std::string, float>>& adapters) {
    Writer w;
    w.value(Command::SetLora).value(context_id_).value(static_cast<uint32_t>(adapters.size()));
    for (const auto& [path, scale] : adapters) w.text(path).value(scale);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), true, 5.0);
}

void MpiStage::save_sequence(runtime::SeqId seq, const std::string& path) {
    Writer w;
    w.value(Command::SaveSequence).value(context_id_).value(seq).text(path);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), true, 5.0);
}

void MpiStage::restore_sequence(runtime::SeqId seq, const std::string& path, uint32_t max_positions) {
    Writer w;
    w.value(Command::RestoreSequence).value(context_id_).value(seq).value(max_positions).text(path);
    const std::lock_guard<std::mutex> lock(pipeline_->mutex());
    pipeline_->broadcast(w.bytes(), true, 5.0);
}

}  // namespace cria::distributed
