#include "cria/server/reference_backend.h"

#include <algorithm>
#include <map>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/reference_forward.h"

namespace cria::server {

ReferenceBackend::ReferenceBackend(const std::string& model_path, int32_t n_seq, int32_t n_ctx)
    : file_(gguf::File::open(model_path)), vocab_(vocab::Vocab::from_gguf(*file_)) {
    if (n_seq <= 0) throw Error("the number of sequences must be positive");
    const std::string arch = file_->get_string("general.architecture", "llama");
    name_ = file_->get_string("general.name", arch);
    chat_template_ = file_->get_string("tokenizer.chat_template", "");
    const int32_t n_ctx_train = static_cast<int32_t>(file_->get_u32(arch + ".context_length", 2048));
    n_ctx_ = n_ctx > 0 ? n_ctx : n_ctx_train;
    seqs_.resize(static_cast<size_t>(n_seq));
    checkpoints_.resize(static_cast<size_t>(n_seq));
}

ReferenceBackend::~ReferenceBackend() = default;

void ReferenceBackend::decode(std::span<const BatchToken> batch, std::vector<float>& logits) {
    // Append first, so a sequence's logit rows see every token of this batch
    // before its own position (causal attention makes later ones irrelevant).
    for (const BatchToken& t : batch) {
        if (t.seq < 0 || static_cast<size_t>(t.seq) >= seqs_.size()) throw Error("decode: sequence id out of range");
        auto& seq = seqs_[static_cast<size_t>(t.seq)];
        if (t.pos != static_cast<int32_t>(seq.size()))
            throw Error("decode: position " + std::to_string(t.pos) + " does not continue sequence " +
                        std::to_string(t.seq) + " of length " + std::to_string(seq.size()));
        if (t.pos >= n_ctx_) throw Error("decode: context of " + std::to_string(n_ctx_) + " positions is full");
        seq.push_back(t.token);
    }
    // One full forward per sequence that wants logits, shared by its rows.
    std::map<int32_t, std::vector<std::vector<float>>> outputs;
    const size_t n_vocab = vocab_.size();
    logits.clear();
    for (const BatchToken& t : batch) {
        if (!t.logits) continue;
        auto it = outputs.find(t.seq);
        if (it == outputs.end())
            it = outputs.emplace(t.seq, model::reference_forward(*file_, seqs_[static_cast<size_t>(t.seq)],
                                                                        static_cast<uint32_t>(n_ctx_))).first;
        const auto& row = it->second.at(static_cast<size_t>(t.pos));
        if (row.size() != n_vocab) throw Error("decode: logit row size does not match the vocabulary");
        logits.insert(logits.end(), row.begin(), row.end());
    }
}

bool ReferenceBackend::seq_keep_prefix(int32_t seq, int32_t keep) {
    if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size()) throw Error("sequence id out of range");
    auto& s = seqs_[static_cast<size_t>(seq)];
    if (keep < static_cast<int32_t>(s.size())) s.resize(static_cast<size_t>(std::max(keep, 0)));
    return true;
}

bool ReferenceBackend::checkpoint_begin(int32_t seq, int32_t n_positions) {
    if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size()) throw Error("sequence id out of range");
    Checkpoint& cp = checkpoints_[static_cast<size_t>(seq)];
    if (cp.base >= 0 || n_positions < 0) return false;
    cp = Checkpoint{static_cast<int32_t>(seqs_[static_cast<size_t>(seq)].size()), n_positions};
    return true;
}

bool ReferenceBackend::checkpoint_commit(int32_t seq, int32_t n_accepted) {
    if (seq < 0 || static_cast<size_t>(seq) >= seqs_.size()) throw Error("sequence id out of range");
    Checkpoint& cp = checkpoints_[static_cast<size_t>(seq)];
    auto& s = seqs_[static_cast<size_t>(seq)];
    const int32_t decoded = std::max(0, static_cast<int32_t>(s.size()) - cp.base);
    if (cp.base < 0 || n_accepted < 0 || n_accepted > std::min(cp.length, decoded)) return false;
    s.resize(static_cast<size_t>(cp.base + n_accepted));
    cp = Checkpoint{};
    return true;
}

std::vector<float> ReferenceBackend::embed(std::span<const TokenId>) {
    throw Error("embeddings need the model runtime; the reference backend only computes logits");
}

}  // namespace cria::server
