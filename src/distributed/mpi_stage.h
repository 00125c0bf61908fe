#pragma once
// A Context's pipeline stage over MPI (runtime::PipelineStage): rank r
// receives a micro-batch's residual stream from rank r - 1 and sends its own
// to rank r + 1; the last rank sends the output rows to rank 0. Sends are
// posted without waiting, so a rank starts on its next micro-batch while the
// previous one travels (the pipeline's overlap); finish_decode waits for them.

#include <mutex>
#include <string>
#include <vector>

#include "cria/distributed/mpi_world.h"
#include "cria/runtime/pipeline.h"

namespace cria::distributed {

class RootPipeline;

class MpiStage final : public runtime::PipelineStage {
public:
    // root: the stage rank 0 drives (then `pipeline` sends its commands).
    MpiStage(const World& world, int32_t context_id, RootPipeline* pipeline);
    ~MpiStage() override;

    bool is_root() const override { return pipeline_ != nullptr; }
    void begin_decode(const runtime::Batch& batch) override;
    void receive_stream(std::span<float> stream) override;
    void send_stream(std::span<const float> stream) override;
    void send_outputs(std::span<const float> outputs) override;
    void receive_outputs(std::span<float> outputs) override;
    void finish_decode() override;
    void applied(const memory::SequenceOp& op) override;
    void save_sequence(runtime::SeqId seq, const std::string& path) override;
    void set_capture_layers(const std::vector<uint32_t>& layers) override;
    uint64_t keep_sequence_state(runtime::SeqId seq) override;
    void load_kept_state(runtime::SeqId seq, uint64_t id, uint32_t max_positions) override;
    void drop_kept_state(uint64_t id) override;
    void set_lora(const std::vector<std::pair<std::string, float>>& adapters) override;
    void restore_sequence(runtime::SeqId seq, const std::string& path, uint32_t max_positions) override;

    // The file rank r keeps its part of a sequence in.
    static std::string rank_file(const std::string& path, int rank) { return path + ".rank" + std::to_string(rank); }

private:
    const World& world_;
    int32_t context_id_;
    RootPipeline* pipeline_;
    std::unique_lock<std::mutex> decoding_;  // root: held for one decode
    std::vector<World::Pending> pending_;
    uint64_t next_kept_ = 1;  // root: the id of the next state the other ranks keep
};

}  // namespace cria::distributed
