// Rank 0's side of the pipeline (cria/distributed/mpi_pipeline.h): loading
// a model as stages, making contexts on every rank, sending commands.

#include <cstdio>

#include "cria/core/error.h"
#include "cria/distributed/mpi_pipeline.h"
#include "cria/gguf/file.h"
#include "cria/model/hparams.h"
#include "cria/runtime/context.h"
#include "cria/runtime/pipeline_split.h"
#include "distributed/host_memory.h"
#include "distributed/mpi_stage.h"
#include "distributed/wire.h"

namespace cria::distributed {

RootPipeline::RootPipeline(const World& world, std::string layer_split)
    : world_(world), layer_split_(std::move(layer_split)) {}

RootPipeline::~RootPipeline() {
    Writer w;
    w.value(Command::Shutdown);
    const std::lock_guard<std::mutex> lock(mutex_);
    broadcast(w.bytes(), false);
}

void RootPipeline::broadcast(const std::vector<std::byte>& command, bool wait_replies, double reply_factor) {
    std::vector<World::Pending> sends;
    for (int r = 1; r < world_.size(); ++r) sends.push_back(world_.send(r, Tag::Command, command));
    world_.wait_all(sends, "sending a command");
    if (!wait_replies) return;
    std::string refused;
    for (int r = 1; r < world_.size(); ++r) {
        const std::vector<std::byte> reply = world_.receive_any_size(r, Tag::Reply, "waiting for a reply", false, reply_factor);
        Reader in(reply);
        const auto ok = in.value<int32_t>();
        const std::string message = in.text();
        if (!ok && refused.empty()) refused = "rank " + std::to_string(r) + ": " + message;
    }
    if (!refused.empty()) throw Error(refused);
}

std::unique_ptr<model::Model> RootPipeline::load_model(const std::string& path, gguf::LoadMode mode, bool pack_weights) {
    auto file = std::shared_ptr<const gguf::File>(gguf::File::open(path, mode));
    const model::HParams hp = model::read_hparams(*file);
    const auto n_ranks = static_cast<uint32_t>(world_.size());
    const std::vector<model::LayerRange> ranges = layer_split_.empty()
        ? runtime::split_layers_by_bytes(*file, n_ranks)
        : runtime::parse_layer_split(layer_split_, hp.n_layer, n_ranks);
    const std::vector<uint64_t> bytes = runtime::stage_bytes(*file, ranges);
    for (uint32_t r = 0; r < n_ranks; ++r)
        std::fprintf(stderr, "pipeline: rank %u holds layers %u..%u (%.1f MiB of weights)%s%s\n", r, ranges[r].begin,
                     ranges[r].end - 1, static_cast<double>(bytes[r]) / (1024.0 * 1024.0), r == 0 ? ", the embedding" : "",
                     r + 1 == n_ranks ? ", the output head" : "");
    const int32_t id = next_model_++;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        std::vector<World::Pending> sends;
        std::vector<std::vector<std::byte>> commands;
        for (uint32_t r = 1; r < n_ranks; ++r) {
            Writer w;
            w.value(Command::LoadModel).value(id).value(mode).value(static_cast<int32_t>(pack_weights));
            w.value(ranges[r]).value(bytes[r]).text(path);
            commands.push_back(w.bytes());
        }
        for (uint32_t r = 1; r < n_ranks; ++r) sends.push_back(world_.send(static_cast<int>(r), Tag::Command, commands[r - 1]));
        world_.wait_all(sends, "sending a command");
        // Loading is slow next to a message: the others load while this rank
        // does. A share too large for its host is refused by that rank first.
        std::string refused_here;
        std::unique_ptr<model::Model> model;
        try {
            if (pack_weights) check_fits(0, ranges[0], bytes[0]);
            model = model::Model::from_file(file, pack_weights, ranges[0]);
        } catch (const Error& e) {
            refused_here = e.what();
        }
        // Every rank's answer, so that the error says what each would need.
        const auto named = [](uint32_t r, const std::string& message) {
            const std::string rank = "rank " + std::to_string(r);
            return message.rfind(rank + " ", 0) == 0 ? message : rank + ": " + message;
        };
        std::string refused = refused_here.empty() ? "" : named(0, refused_here);
        for (uint32_t r = 1; r < n_ranks; ++r) {
            const std::vector<std::byte> reply =
                world_.receive_any_size(static_cast<int>(r), Tag::Reply, "waiting for a rank to load the model", false, 20.0);
            Reader in(reply);
            const auto ok = in.value<int32_t>();
            const std::string message = in.text();
            if (!ok) refused += (refused.empty() ? "" : "; ") + named(r, message);
        }
        if (!refused.empty()) {
            const auto mib = [](uint64_t b) {
                char text[32];
                std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
                return std::string(text);
            };
            std::string needs;
            for (uint32_t r = 0; r < n_ranks; ++r)
                needs += (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " + mib(bytes[r]);
            throw Error("pipeline: the ranks cannot load " + path + " (weights each rank needs: " + needs + "): " + refused);
        }
        model_ids_[model.get()] = id;
        return model;
    }
}

std::shared_ptr<runtime::PipelineStage> RootPipeline::make_stage(const model::Model& model,
                                                                const runtime::ContextParams& p) {
    const auto it = model_ids_.find(&model);
    if (it == model_ids_.end()) throw Error("pipeline: the model was not loaded through the pipeline");
    const int32_t id = next_context_++;
    Writer w;
    w.value(Command::CreateContext).value(id).value(it->second);
    w.value(p.n_ctx).value(p.n_batch).value(p.n_ubatch).value(p.n_seq_max).value(p.n_threads);
    w.value(p.type_k).value(p.type_v).value(static_cast<int32_t>(p.embeddings)).value(p.pooling);
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        broadcast(w.bytes(), true, 5.0);
    }
    return std::make_shared<MpiStage>(world_, id, this);
}

}  // namespace cria::distributed
