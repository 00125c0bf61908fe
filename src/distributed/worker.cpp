// The loop of every rank but 0 (cria/distributed/mpi_pipeline.h): rank 0's
// commands, done on this rank's stage of the model.

#include <map>
#include <memory>

#include "cria/core/error.h"
#include "cria/distributed/mpi_pipeline.h"
#include "cria/memory/sequence_op.h"
#include "cria/model/lora.h"
#include "cria/runtime/context.h"
#include "distributed/host_memory.h"
#include "distributed/mpi_stage.h"
#include "distributed/wire.h"

namespace cria::distributed {
namespace {

void reply(const World& world, bool ok, const std::string& message) {
    Writer w;
    w.value(static_cast<int32_t>(ok)).text(message);
    World::Pending p = world.send(0, Tag::Reply, w.bytes());
    world.wait(p, "replying to rank 0");
}

runtime::Batch read_batch(Reader& in) {
    const auto n_embd = in.value<int32_t>();
    const auto tokens = in.array<int32_t>();
    const auto embd = in.array<float>();
    const auto positions = in.array<int32_t>();
    const auto masks = in.array<uint64_t>();
    const auto outputs = in.array<uint8_t>();
    const size_t n = positions.size();
    if (masks.size() != n || outputs.size() != n || (embd.empty() ? tokens.size() != n : embd.size() != n * static_cast<size_t>(n_embd)))
        throw Error("pipeline message: a batch whose parts disagree in length");
    runtime::Batch batch;
    std::vector<runtime::SeqId> seqs;
    for (size_t i = 0; i < n; ++i) {
        seqs.clear();
        for (uint64_t m = masks[i]; m != 0; m &= m - 1) seqs.push_back(std::countr_zero(m));
        if (embd.empty())
            batch.add(tokens[i], positions[i], seqs, outputs[i] != 0);
        else
            batch.add_embedding(embd.data() + i * static_cast<size_t>(n_embd), n_embd, positions[i], seqs, outputs[i] != 0);
    }
    return batch;
}

}  // namespace

void run_worker(const World& world) {
    std::map<int32_t, std::unique_ptr<model::Model>> models;
    std::map<int32_t, std::unique_ptr<runtime::Context>> contexts;
    // Per context: this rank's parts of the states rank 0 keeps in RAM, by id.
    std::map<int32_t, std::map<uint64_t, std::vector<uint8_t>>> kept;
    // Per context: the LoRA adapters loaded for this rank's layers, by file (kept while the context applies them).
    std::map<int32_t, std::map<std::string, std::unique_ptr<model::LoraAdapter>>> adapters;
    const auto context = [&](int32_t id) -> runtime::Context& {
        const auto it = contexts.find(id);
        if (it == contexts.end()) throw Error("pipeline: rank 0 named context " + std::to_string(id) + ", which this rank does not have");
        return *it->second;
    };
    while (true) {
        const std::vector<std::byte> message = world.receive_any_size(0, Tag::Command, "waiting for a command", true);
        try {
            Reader in(message);
            switch (in.value<Command>()) {
                case Command::LoadModel: {
                    const auto id = in.value<int32_t>();
                    const auto mode = in.value<gguf::LoadMode>();
                    const bool pack = in.value<int32_t>() != 0;
                    const auto range = in.value<model::LayerRange>();
                    const auto need = in.value<uint64_t>();
                    const std::string path = in.text();
                    try {
                        if (pack) check_fits(world.rank(), range, need);
                        models[id] = model::Model::load(path, mode, pack, range);
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::CreateContext: {
                    const auto id = in.value<int32_t>();
                    const auto model_id = in.value<int32_t>();
                    runtime::ContextParams p;
                    p.n_ctx = in.value<uint32_t>();
                    p.n_batch = in.value<uint32_t>();
                    p.n_ubatch = in.value<uint32_t>();
                    p.n_seq_max = in.value<uint32_t>();
                    p.n_threads = in.value<int>();
                    p.type_k = in.value<ElementType>();
                    p.type_v = in.value<ElementType>();
                    p.embeddings = in.value<int32_t>() != 0;
                    p.pooling = in.value<runtime::Pooling>();
                    p.stage = std::make_shared<MpiStage>(world, id, nullptr);
                    try {
                        const auto it = models.find(model_id);
                        if (it == models.end()) throw Error("no model " + std::to_string(model_id) + " here");
                        contexts[id] = std::make_unique<runtime::Context>(*it->second, p);
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::DestroyContext: {
                    const auto id = in.value<int32_t>();
                    contexts.erase(id);
                    kept.erase(id);
                    adapters.erase(id);
                    break;
                }
                case Command::KeepState: {
                    const auto id = in.value<int32_t>();
                    runtime::Context& ctx = context(id);
                    const auto seq = in.value<runtime::SeqId>();
                    const auto state_id = in.value<uint64_t>();
                    try {
                        kept[id][state_id] = ctx.sequence_state(seq, {});  // the tokens are rank 0's to know
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::LoadKeptState: {
                    const auto id = in.value<int32_t>();
                    runtime::Context& ctx = context(id);
                    const auto seq = in.value<runtime::SeqId>();
                    const auto state_id = in.value<uint64_t>();
                    const auto max_positions = in.value<uint32_t>();
                    try {
                        const auto it = kept[id].find(state_id);
                        if (it == kept[id].end())
                            throw Error("no kept state " + std::to_string(state_id) + " here (dropped, or never kept)");
                        ctx.load_sequence_state(seq, it->second, max_positions);
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::SetLora: {
                    const auto id = in.value<int32_t>();
                    runtime::Context& ctx = context(id);
                    const auto n = in.value<uint32_t>();
                    std::vector<std::pair<std::string, float>> wanted;
                    for (uint32_t i = 0; i < n; ++i) {
                        std::string path = in.text();
                        wanted.emplace_back(std::move(path), in.value<float>());
                    }
                    try {
                        std::map<std::string, std::unique_ptr<model::LoraAdapter>>& loaded = adapters[id];
                        model::LoraSet set;
                        for (const auto& [path, scale] : wanted) {
                            std::unique_ptr<model::LoraAdapter>& a = loaded[path];
                            if (!a) a = model::LoraAdapter::load(path, ctx.model());
                            set.add(*a, scale);
                        }
                        // Set first (the context lets go of the old set), then forget the unused files.
                        ctx.set_lora(std::move(set));
                        std::erase_if(loaded, [&](const auto& kv) {
                            for (const auto& w : wanted)
                                if (w.first == kv.first) return false;
                            return true;
                        });
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::DropKeptState: {
                    const auto id = in.value<int32_t>();
                    kept[id].erase(in.value<uint64_t>());
                    break;
                }
                case Command::Decode: {
                    runtime::Context& ctx = context(in.value<int32_t>());
                    ctx.decode(read_batch(in));  // the same answer as rank 0's, which needs none from here
                    break;
                }
                case Command::MemoryOp: {
                    runtime::Context& ctx = context(in.value<int32_t>());
                    apply_sequence_op(ctx.memory(), in.value<memory::SequenceOp>());
                    break;
                }
                case Command::SetCapture: {
                    runtime::Context& ctx = context(in.value<int32_t>());
                    ctx.set_capture_layers(in.array<uint32_t>());  // checked on rank 0 against the same model
                    break;
                }
                case Command::SaveSequence:
                case Command::RestoreSequence: {
                    const bool save = message.size() >= sizeof(Command) &&
                                      Reader(message).value<Command>() == Command::SaveSequence;
                    runtime::Context& ctx = context(in.value<int32_t>());
                    const auto seq = in.value<runtime::SeqId>();
                    const uint32_t max_positions = save ? 0 : in.value<uint32_t>();
                    const std::string path = MpiStage::rank_file(in.text(), world.rank());
                    try {
                        if (save)
                            ctx.save_sequence(seq, {}, path);
                        else
                            ctx.restore_sequence(seq, path, max_positions);
                        reply(world, true, "");
                    } catch (const std::exception& e) {
                        reply(world, false, e.what());
                    }
                    break;
                }
                case Command::Shutdown: return;
                default: throw Error("pipeline: unknown command from rank 0");
            }
        } catch (const std::exception& e) {
            world.fail(e.what());
        }
    }
}

}  // namespace cria::distributed
