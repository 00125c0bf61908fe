// The process-wide pipeline hook (cria/runtime/pipeline.h).

#include "cria/runtime/pipeline.h"

#include "cria/core/error.h"

namespace cria::runtime {
namespace {

Pipeline* g_pipeline = nullptr;

}  // namespace

void PipelineStage::save_sequence(SeqId, const std::string&) {
    throw Error("save_sequence: this pipeline cannot save a sequence's state");
}

void PipelineStage::restore_sequence(SeqId, const std::string&, uint32_t) {
    throw Error("restore_sequence: this pipeline cannot restore a sequence's state");
}

uint64_t PipelineStage::keep_sequence_state(SeqId) {
    throw Error("sequence_state: this pipeline cannot keep a sequence's state in RAM");
}

void PipelineStage::load_kept_state(SeqId, uint64_t, uint32_t) {
    throw Error("load_sequence_state: this pipeline cannot keep a sequence's state in RAM");
}

void PipelineStage::drop_kept_state(uint64_t) {}

void PipelineStage::set_lora(const std::vector<std::pair<std::string, float>>& adapters) {
    if (!adapters.empty()) throw Error("LoRA: this pipeline cannot apply adapters across its stages");
}

void PipelineStage::set_capture_layers(const std::vector<uint32_t>&) {
    throw Error("context: this pipeline cannot capture target features across its stages");
}

void install_pipeline(Pipeline* pipeline) { g_pipeline = pipeline; }

Pipeline* installed_pipeline() { return g_pipeline; }

std::unique_ptr<model::Model> load_model(const std::string& path, gguf::LoadMode mode, bool pack_weights) {
    if (g_pipeline != nullptr) return g_pipeline->load_model(path, mode, pack_weights);
    return model::Model::load(path, mode, pack_weights);
}

}  // namespace cria::runtime
