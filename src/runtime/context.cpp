#include "cria/runtime/context.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "cria/core/error.h"

namespace cria::runtime {
namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Context::Context(const model::Model& model, const ContextParams& params)
    : model_(model), params_(params), pool_(params.n_threads), ops_(pool_) {
    const model::HParams& hp = model.hparams();
    if (params_.n_ctx == 0) params_.n_ctx = hp.n_ctx_train;
    if (params_.n_ubatch == 0 || params_.n_batch == 0) throw Error("context: n_batch and n_ubatch must be positive");
    params_.n_ubatch = std::min(params_.n_ubatch, params_.n_batch);
    if (params_.n_seq_max == 0 || params_.n_seq_max > static_cast<uint32_t>(memory::kMaxSequences))
        throw Error("context: n_seq_max must be within 1.." + std::to_string(memory::kMaxSequences));

    // Sliding-window layers get their own small cache when the window is
    // shorter than the context (llama.cpp's iSWA cache); otherwise one cache.
    uint32_t n_full = 0, n_swa = 0;
    for (uint32_t l = 0; l < hp.n_layer; ++l) (hp.is_swa(l) && hp.n_swa < params_.n_ctx ? n_swa : n_full)++;
    memory::KvCacheParams kp;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    kp.type_k = params_.type_k;
    kp.type_v = params_.type_v;
    if (n_full > 0) {
        kp.n_cells = params_.n_ctx;
        kp.n_layer = n_full;
        full_ = std::make_unique<memory::KvCache>(kp);
    }
    if (n_swa > 0) {
        kp.n_layer = n_swa;
        kp.n_swa = hp.n_swa;
        kp.n_cells = std::min(params_.n_ctx, hp.n_swa * params_.n_seq_max + params_.n_ubatch);
        swa_ = std::make_unique<memory::KvCache>(kp);
    }
    uint32_t i_full = 0, i_swa = 0;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        if (hp.is_swa(l) && hp.n_swa < params_.n_ctx)
            layer_cache_.emplace_back(swa_.get(), i_swa++);
        else
            layer_cache_.emplace_back(full_.get(), i_full++);
    }
    ws_.reserve(model, params_.n_ubatch);
    out_rows_.reserve(params_.n_ubatch);
}

Context::~Context() = default;

void Context::attend(uint32_t layer, const ops::TensorView& q, const ops::TensorView& k, const ops::TensorView& v,
                     const ops::AttentionParams& params, const ops::TensorView& out) {
    auto [cache, index] = layer_cache_[layer];
    cache->store(index, k, v);
    cache->attend(ops_, index, q, params, static_cast<uint32_t>(params.window), out);
}

int Context::decode(const Batch& batch) {
    const model::HParams& hp = model_.hparams();
    const int64_t n = batch.size();
    if (n == 0) throw Error("decode: the batch is empty");
    if (n > params_.n_batch)
        throw Error("decode: the batch has " + std::to_string(n) + " tokens, more than n_batch = " +
                    std::to_string(params_.n_batch));
    if (batch.has_embeddings() && batch.n_embd() != static_cast<int32_t>(hp.n_embd))
        throw Error("decode: input embeddings must have " + std::to_string(hp.n_embd) + " values");
    for (int64_t i = 0; i < n; ++i) {
        if (!batch.has_embeddings()) {
            const TokenId t = batch.tokens()[i];
            if (t < 0 || static_cast<uint32_t>(t) >= hp.n_vocab)
                throw Error("decode: token id " + std::to_string(t) + " is outside the vocabulary of " +
                            std::to_string(hp.n_vocab));
        }
        if (batch.positions()[i] < 0) throw Error("decode: negative position");
        if (batch.seq_masks()[i] >> params_.n_seq_max)
            throw Error("decode: sequence id beyond n_seq_max = " + std::to_string(params_.n_seq_max));
    }
    const double t0 = now_ms();

    // A pending context shift re-rotates the cached keys first.
    apply_pending_shifts();

    // Output bookkeeping.
    const bool pooled = params_.embeddings && params_.pooling != Pooling::None;
    output_index_.assign(static_cast<size_t>(n), -1);
    n_outputs_ = 0;
    for (int64_t i = 0; i < n; ++i)
        if (batch.outputs()[i] || pooled) output_index_[i] = n_outputs_++;
    const bool want_logits = !pooled;
    if (want_logits) logits_.resize(static_cast<size_t>(n_outputs_) * hp.n_vocab);
    if (params_.embeddings) embd_.resize(static_cast<size_t>(n_outputs_) * hp.n_embd);

    for (int64_t first = 0; first < n; first += params_.n_ubatch) {
        const int64_t count = std::min<int64_t>(params_.n_ubatch, n - first);
        if (decode_ubatch(batch, first, count) != 0) {
            // Undo the micro-batches already placed, as llama.cpp does.
            for (int64_t i = 0; i < first; ++i)
                for (uint64_t m = batch.seq_masks()[i]; m != 0; m &= m - 1) {
                    const int32_t p = batch.positions()[i];
                    memory_seq_rm(std::countr_zero(m), p, p + 1);
                }
            return 1;
        }
    }

    if (pooled) {
        pooled_.assign(static_cast<size_t>(params_.n_seq_max) * hp.n_embd, 0.0f);
        pooled_index_.assign(params_.n_seq_max, -1);
        std::vector<int32_t> count(params_.n_seq_max, 0), chosen_pos(params_.n_seq_max, -1);
        for (int64_t i = 0; i < n; ++i) {
            const float* h = embd_.data() + static_cast<size_t>(output_index_[i]) * hp.n_embd;
            for (uint64_t m = batch.seq_masks()[i]; m != 0; m &= m - 1) {
                const int s = std::countr_zero(m);
                float* dst = pooled_.data() + static_cast<size_t>(s) * hp.n_embd;
                const int32_t p = batch.positions()[i];
                pooled_index_[s] = s;
                if (params_.pooling == Pooling::Mean) {
                    for (uint32_t c = 0; c < hp.n_embd; ++c) dst[c] += h[c];
                    ++count[s];
                } else if ((params_.pooling == Pooling::Last && p >= chosen_pos[s]) ||
                           (params_.pooling == Pooling::Cls && (chosen_pos[s] < 0 || p < chosen_pos[s]))) {
                    std::memcpy(dst, h, hp.n_embd * sizeof(float));
                    chosen_pos[s] = p;
                }
            }
        }
        if (params_.pooling == Pooling::Mean)
            for (uint32_t s = 0; s < params_.n_seq_max; ++s)
                for (uint32_t c = 0; c < hp.n_embd && count[s] > 0; ++c)
                    pooled_[static_cast<size_t>(s) * hp.n_embd + c] /= static_cast<float>(count[s]);
    }

    const double dt = now_ms() - t0;
    if (n > 1) {
        timings_.prompt_ms += dt;
        timings_.prompt_tokens += n;
    } else {
        timings_.eval_ms += dt;
        timings_.eval_tokens += n;
    }
    return 0;
}

void Context::apply_pending_shifts() {
    const model::HParams& hp = model_.hparams();
    for (memory::KvCache* cache : {full_.get(), swa_.get()}) {
        if (cache == nullptr || !cache->has_shift()) continue;
        // The cache's layer i is the i-th model layer that uses it.
        std::vector<uint32_t> model_layer;
        for (uint32_t l = 0; l < hp.n_layer; ++l)
            if (layer_cache_[l].first == cache) model_layer.push_back(l);
        const bool long_rope = model_.long_rope_for_context(params_.n_ctx);
        cache->apply_shift(ops_, [&](uint32_t i) { return model_.rope_params(model_layer[i], long_rope); });
    }
}

int Context::decode_ubatch(const Batch& batch, int64_t first, int64_t n) {
    const model::HParams& hp = model_.hparams();
    const memory::UbatchView view{n, batch.positions().data() + first, batch.seq_masks().data() + first};
    if (full_ && !full_->place(view)) return 1;
    if (swa_ && !swa_->place(view)) {
        // Give back what the full cache took for this micro-batch.
        if (full_)
            for (int64_t i = 0; i < n; ++i)
                for (uint64_t m = view.seq_masks[i]; m != 0; m &= m - 1)
                    full_->seq_rm(std::countr_zero(m), view.positions[i], view.positions[i] + 1);
        return 1;
    }
    out_rows_.clear();
    int32_t first_out = -1;
    for (int64_t i = 0; i < n; ++i)
        if (output_index_[first + i] >= 0) {
            if (first_out < 0) first_out = output_index_[first + i];
            out_rows_.push_back(static_cast<int32_t>(i));
        }
    model::ForwardInput in;
    in.n_tokens = n;
    if (batch.has_embeddings())
        in.embd = batch.embeddings().data() + first * hp.n_embd;
    else
        in.tokens = batch.tokens().data() + first;
    in.positions = view.positions;
    in.output_rows = out_rows_.data();
    in.n_outputs = static_cast<int64_t>(out_rows_.size());
    in.want_logits = !(params_.embeddings && params_.pooling != Pooling::None);
    in.want_hidden = params_.embeddings;
    in.long_rope = model_.long_rope_for_context(params_.n_ctx);
    float* logits = in.want_logits && first_out >= 0 ? logits_.data() + static_cast<size_t>(first_out) * hp.n_vocab : nullptr;
    float* hidden = in.want_hidden && first_out >= 0 ? embd_.data() + static_cast<size_t>(first_out) * hp.n_embd : nullptr;
    model_.forward(ops_, ws_, in, *this, logits, hidden);
    return 0;
}

std::span<const float> Context::logits(int32_t i) const {
    const uint32_t n_vocab = model_.hparams().n_vocab;
    int32_t row = -1;
    if (i < 0) {
        row = n_outputs_ + i;
    } else if (static_cast<size_t>(i) < output_index_.size()) {
        row = output_index_[i];
    }
    if (row < 0 || row >= n_outputs_ || logits_.size() < static_cast<size_t>(n_outputs_) * n_vocab)
        throw Error("logits: batch entry " + std::to_string(i) + " has no logits");
    return {logits_.data() + static_cast<size_t>(row) * n_vocab, n_vocab};
}

std::span<const float> Context::embeddings(int32_t i) const {
    const uint32_t n_embd = model_.hparams().n_embd;
    int32_t row = i < 0 ? n_outputs_ + i : (static_cast<size_t>(i) < output_index_.size() ? output_index_[i] : -1);
    if (!params_.embeddings || row < 0 || row >= n_outputs_)
        throw Error("embeddings: batch entry " + std::to_string(i) + " has no embedding");
    return {embd_.data() + static_cast<size_t>(row) * n_embd, n_embd};
}

std::span<const float> Context::embeddings_seq(SeqId seq) const {
    const uint32_t n_embd = model_.hparams().n_embd;
    if (params_.pooling == Pooling::None || seq < 0 || static_cast<size_t>(seq) >= pooled_index_.size() ||
        pooled_index_[seq] < 0)
        throw Error("embeddings: no pooled embedding for sequence " + std::to_string(seq));
    return {pooled_.data() + static_cast<size_t>(seq) * n_embd, n_embd};
}

void Context::memory_clear() {
    if (full_) full_->clear();
    if (swa_) swa_->clear();
}
void Context::memory_seq_rm(SeqId seq, int32_t p0, int32_t p1) {
    if (full_) full_->seq_rm(seq, p0, p1);
    if (swa_) swa_->seq_rm(seq, p0, p1);
}
void Context::memory_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) {
    if (full_) full_->seq_cp(src, dst, p0, p1);
    if (swa_) swa_->seq_cp(src, dst, p0, p1);
}
void Context::memory_seq_keep(SeqId seq) {
    if (full_) full_->seq_keep(seq);
    if (swa_) swa_->seq_keep(seq);
}
void Context::memory_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) {
    if (full_) full_->seq_add(seq, p0, p1, delta);
    if (swa_) swa_->seq_add(seq, p0, p1, delta);
}
int32_t Context::memory_seq_pos_max(SeqId seq) const {
    int32_t p = -1;
    if (full_) p = std::max(p, full_->seq_pos_max(seq));
    if (swa_) p = std::max(p, swa_->seq_pos_max(seq));
    return p;
}
int32_t Context::memory_seq_pos_min(SeqId seq) const {
    // The full cache remembers everything; the SWA cache only the window.
    return full_ ? full_->seq_pos_min(seq) : swa_->seq_pos_min(seq);
}
size_t Context::memory_bytes() const {
    return (full_ ? full_->memory_bytes() : 0) + (swa_ ? swa_->memory_bytes() : 0);
}

}  // namespace cria::runtime
