#pragma once
// A Backend over model::reference_forward: exact but without a KV cache, so
// every decode() recomputes each sequence that wants logits from its first
// token. Usable for tiny models (tests, stories260K) and as the oracle the
// runtime backend can be compared with.
#include <memory>
#include <string>
#include <vector>

#include "cria/server/backend.h"

namespace cria::gguf {
class File;
}

namespace cria::server {

class ReferenceBackend final : public Backend {
public:
    // n_seq sequences of n_ctx positions each (n_ctx <= 0: the model's training context).
    ReferenceBackend(const std::string& model_path, int32_t n_seq, int32_t n_ctx);
    ~ReferenceBackend() override;

    const vocab::Vocab& vocab() const override { return vocab_; }
    int32_t n_vocab() const override { return static_cast<int32_t>(vocab_.size()); }
    int32_t n_ctx_per_seq() const override { return n_ctx_; }
    int32_t max_batch() const override { return 512; }
    std::string model_name() const override { return name_; }
    std::string chat_template() const override { return chat_template_; }

    void decode(std::span<const BatchToken> batch, std::vector<float>& logits) override;
    bool seq_keep_prefix(int32_t seq, int32_t keep) override;
    // A checkpoint remembers where the verify batch starts; commit truncates after the accepted positions.
    bool checkpoint_begin(int32_t seq, int32_t n_positions) override;
    bool checkpoint_commit(int32_t seq, int32_t n_accepted) override;
    std::vector<float> embed(std::span<const TokenId> tokens) override;

private:
    std::unique_ptr<gguf::File> file_;
    vocab::Vocab vocab_;
    std::string name_;
    std::string chat_template_;
    int32_t n_ctx_ = 0;
    std::vector<std::vector<TokenId>> seqs_;
    struct Checkpoint {
        int32_t base = -1;  // -1: none open
        int32_t length = 0;
    };
    std::vector<Checkpoint> checkpoints_;  // per sequence
};

}  // namespace cria::server
