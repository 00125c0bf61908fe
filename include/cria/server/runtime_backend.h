#pragma once
// The Backend for real use: cria_runtime's Context with one KV-cache
// sequence per slot, so one decode() serves every slot at once.
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cria/core/element_type.h"
#include "cria/gguf/load_mode.h"
#include "cria/server/backend.h"
#include "cria/spec/registry.h"

namespace cria::model {
class Model;
class LoraAdapter;
}
namespace cria::runtime {
class Context;
class Embedder;
}

namespace cria::server {

struct RuntimeBackendParams {
    int32_t n_seq = 1;        // slots
    int32_t n_ctx = 0;        // total cache cells, shared by the slots as llama-server's -c (0: train context x slots)
    int32_t n_batch = 512;
    int32_t n_ubatch = 0;     // tokens per forward pass (0: n_batch)
    int n_threads = 0;        // <= 0: one per hardware thread
    ElementType type_k = ElementType::F16;  // KV cache types (-ctk / -ctv)
    ElementType type_v = ElementType::F16;
    gguf::LoadMode load_mode = gguf::LoadMode::Auto;
    bool repack = true;       // false: --no-repack (weights as the file stores them)
    // LoRA adapters (GGUF files) and their initial scales, applied to every slot alike.
    std::vector<std::pair<std::string, float>> lora;
    // --pooling: none, mean, cls, last or rank; "" the model's pooling_type
    // (mean when the file names none).
    std::string pooling;
    // --embedding: completions and chat are refused (an encoder is always so).
    bool embedding_only = false;
};

class RuntimeBackend : public Backend {
public:
    RuntimeBackend(const std::string& model_path, const RuntimeBackendParams& params);
    ~RuntimeBackend() override;

    const vocab::Vocab& vocab() const override { return *vocab_; }
    int32_t n_vocab() const override;
    int32_t n_ctx_per_seq() const override { return n_ctx_per_seq_; }
    bool mrope() const override;
    int32_t max_batch() const override { return params_.n_batch; }
    std::string model_name() const override;
    std::string chat_template() const override;
    std::string context_shift_refusal() const override;
    uint64_t seq_sharing(int32_t seq, int32_t p0, int32_t p1) const override;
    void seq_shift(int32_t seq, int32_t n_past, int32_t n_keep, int32_t n_discard) override;
    // The settings in effect, for a user to see that their flags took:
    // "n_ctx 1024, batch 512/512, KV cache f16/f16, loaded with mmap, 12.0 MiB of weights packed".
    std::string describe_settings() const;
    const model::Model& model() const { return *model_; }

    void decode(std::span<const BatchToken> batch, std::vector<float>& logits) override;
    void decode_image(int32_t seq, int32_t pos, const media::ImageChunk& image,
                      std::vector<float>* features = nullptr) override;
    // The context's memory (runtime::Context::memory_seq_rm, memory().checkpoint_*).
    bool seq_keep_prefix(int32_t seq, int32_t keep) override;
    bool seq_copy_prefix(int32_t src, int32_t dst, int32_t n) override;
    bool checkpoint_begin(int32_t seq, int32_t n_positions) override;
    bool checkpoint_commit(int32_t seq, int32_t n_accepted) override;
    // The KV cells themselves (runtime::Context::save_sequence).
    size_t save_sequence(int32_t seq, std::span<const TokenId> tokens, const std::string& path) override;
    std::vector<TokenId> restore_sequence(int32_t seq, const std::string& path) override;
    size_t save_sequence_with_media(int32_t seq, std::span<const TokenId> tokens, const std::string& path,
                                    std::span<const runtime::SavedMedia> media) override;
    std::vector<TokenId> restore_sequence_with_media(int32_t seq, const std::string& path,
                                                     std::vector<runtime::SavedMedia>& media) override;
    std::vector<uint8_t> sequence_state(int32_t seq, std::span<const TokenId> tokens) override;
    std::vector<TokenId> load_sequence_state(int32_t seq, std::span<const uint8_t> state) override;
    void drop_sequence_state(std::span<const uint8_t> state) override;
    // The adapters of params.lora (model/lora.h), applied to every decode of
    // the slots' context with the scales set last (the scheduler sets each
    // batch's). Safe to call from any thread: HTTP handlers list the
    // adapters while the scheduler's thread changes the scales.
    std::vector<LoraAdapterInfo> lora_adapters() const override;
    void set_lora_scales(const std::vector<float>& scales) override;
    // With adapters and a context in one process (runtime::Context::
    // set_sequence_lora; not a pipeline over ranks).
    bool mixes_lora_scales() const override;
    void set_sequence_lora_scales(int32_t seq, const std::vector<float>& scales) override;
    bool wants_turn_checkpoints() const override;
    std::vector<uint8_t> snapshot_sequence(int32_t seq, std::span<const TokenId> tokens) override;
    std::vector<TokenId> restore_snapshot(int32_t seq, std::span<const uint8_t> state) override;
    // spec::make_drafters with one ngram-mod pool shared by the slots; the
    // draft model is loaded once and shared, each slot drafting in a context
    // of its own the size of a slot.
    std::vector<std::unique_ptr<spec::Drafter>> make_drafters(const spec::SpecParams& params) override;
    // Uses a second, small context with mean pooling, created on first use.
    void set_capture_layers(const std::vector<uint32_t>& layers) override;
    spec::FeaturesView features(size_t first_row, size_t n_rows, int32_t pos0) const override;
    int32_t max_embedding_tokens() const override;
    // Through runtime::Embedder with the pooling in effect (not rank, not none).
    std::vector<float> embed(std::span<const TokenId> tokens) override;
    std::vector<std::vector<float>> embed_rows(std::span<const TokenId> tokens) override;
    bool generates_text() const override;
    // Under rank pooling: each document joined to the query as llama-server
    // joins them (runtime::rerank_tokens), scored by the classifier head.
    std::vector<float> rerank(const std::string& query, const std::vector<std::string>& documents,
                              int64_t& n_tokens) override;
    // The pooling embed() and rerank() use.
    std::string pooling_name() const;
    bool embeds_per_token() const override { return pooling_name() == "none"; }

private:
    RuntimeBackendParams params_;
    std::unique_ptr<model::Model> model_;
    std::vector<std::unique_ptr<model::LoraAdapter>> adapters_;
    std::vector<float> lora_scales_;  // under lora_mutex_
    mutable std::mutex lora_mutex_;
    std::unique_ptr<vocab::Vocab> vocab_;
    std::unique_ptr<runtime::Context> ctx_;
    std::vector<int32_t> output_entries_;  // batch entry of each logit row of the last decode()
    int32_t n_ctx_per_seq_ = 0;
    std::mutex embed_mutex_;
    std::unique_ptr<runtime::Embedder> embedder_;
    spec::DrafterResources drafter_resources_;  // shared by the slots' drafters
};

}  // namespace cria::server
