#pragma once
// Pipeline-parallel inference over MPI: runtime::Pipeline for rank 0, and
// the loop the other ranks run.
//
// Rank 0 runs the tool (cria run, serve, bench, perplexity, logits) as in a
// single process; its RootPipeline is installed (runtime::install_pipeline)
// so that the tool's model is loaded as a stage and its contexts decode
// through MPI. Every other rank runs run_worker(): it waits for rank 0's
// commands (load a model's layer range, make or drop a context, decode a
// batch, apply a memory operation, shut down) and does them on its own
// stage. Only rank 0 samples, parses grammars, drafts and speaks HTTP.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cria/distributed/mpi_world.h"
#include "cria/runtime/pipeline.h"

namespace cria::distributed {

class RootPipeline final : public runtime::Pipeline {
public:
    // layer_split: "" (by weight bytes) or counts per rank ("10,14").
    RootPipeline(const World& world, std::string layer_split);
    ~RootPipeline() override;  // tells every other rank to shut down

    std::unique_ptr<model::Model> load_model(const std::string& path, gguf::LoadMode mode, bool pack_weights) override;
    std::shared_ptr<runtime::PipelineStage> make_stage(const model::Model& model,
                                                      const runtime::ContextParams& params) override;

    // One command to every other rank; with a reply, waits for all replies
    // and throws cria::Error naming the first rank that refused.
    void broadcast(const std::vector<std::byte>& command, bool wait_replies, double reply_factor = 1.0);
    const World& world() const { return world_; }
    // Held from a decode's first message to its last, and around every
    // command, so that messages of different contexts never interleave.
    std::mutex& mutex() { return mutex_; }

private:
    const World& world_;
    std::string layer_split_;
    std::mutex mutex_;
    std::map<const model::Model*, int32_t> model_ids_;
    int32_t next_model_ = 1;
    int32_t next_context_ = 1;
};

// The loop of a rank other than 0; returns when rank 0 says shut down.
// Any error ends the whole job through World::fail.
void run_worker(const World& world);

}  // namespace cria::distributed
