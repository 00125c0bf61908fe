#include "cria/runtime/context.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <utility>

#include "cria/core/error.h"
#include "cria/runtime/model_memory.h"

namespace cria::runtime {
namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Context::Context(const model::Model& model, const ContextParams& params) : Context(model, params, nullptr) {}

Context::Context(const model::Model& model, const ContextParams& params, std::unique_ptr<memory::HybridMemory> memory)
    : model_(model), params_(params), pool_(params.n_threads), ops_(pool_) {
    const model::HParams& hp = model.hparams();
    if (params_.n_ctx == 0) params_.n_ctx = hp.n_ctx_train;
    if (params_.n_ubatch == 0 || params_.n_batch == 0) throw Error("context: n_batch and n_ubatch must be positive");
    params_.n_ubatch = std::min(params_.n_ubatch, params_.n_batch);
    if (params_.n_seq_max == 0 || params_.n_seq_max > static_cast<uint32_t>(memory::kMaxSequences))
        throw Error("context: n_seq_max must be within 1.." + std::to_string(memory::kMaxSequences));

    if (hp.is_encoder && !params_.embeddings)
        throw Error(hp.arch_name + " is an encoder (an embedding or reranking model): it computes embeddings, "
                    "not text; use `cria embedding` or `cria serve --embedding`");
    if (params_.pooling == Pooling::Rank) {
        if (!model.weights().cls.present() && !model.weights().cls_out.present())
            throw Error("rank pooling needs a classifier head (cls.weight or cls.output.weight), which this " +
                        hp.arch_name + " model does not have");
        if (hp.n_cls_out > hp.n_embd) throw Error("context: the classifier head has more outputs than n_embd");
    }
    memory_ = memory ? std::move(memory) : make_model_memory(hp, params_, model.layers());
    // The stage is this context's own: params() never hands it on (a draft
    // model's context made from these params must not decode through it).
    std::shared_ptr<PipelineStage> stage = std::move(params_.stage);
    params_.stage.reset();
    if (model.holds_all_layers()) {
        stage.reset();
    } else if (!stage) {
        Pipeline* pipeline = installed_pipeline();
        if (pipeline == nullptr)
            throw Error("context: the model holds layers " + std::to_string(model.layers().begin) + ".." +
                        std::to_string(model.layers().end - 1) + " only, and no pipeline links it to the others");
        stage = pipeline->make_stage(model, params_);
    }
    owned_stage_ = std::move(stage);
    stage_ = owned_stage_.get();
    // The root's memory operations reach the other stages' memories.
    if (stage_ != nullptr && stage_->is_root()) memory_->set_observer(stage_);
    if (memory_->n_layer() != hp.n_layer)
        throw Error("context: the memory maps " + std::to_string(memory_->n_layer()) + " layers, the model has " +
                    std::to_string(hp.n_layer));
    set_capture_layers(std::exchange(params_.capture_layers, {}));
    ws_.reserve(model, params_.n_ubatch);
    out_rows_.reserve(params_.n_ubatch);
}

Context::~Context() {
    if (memory_) memory_->set_observer(nullptr);
}

void Context::attend(uint32_t layer, const ops::TensorView& q, const ops::TensorView& k, const ops::TensorView& v,
                     const ops::AttentionParams& params, const ops::TensorView& out) {
    // A direct (non-virtual) call into the layer's KV cache: the hot path.
    const memory::HybridMemory::LayerSlot& slot = memory_->layer(layer);
    if (slot.kv == nullptr) throw Error("decode: layer " + std::to_string(layer) + " has no KV cache to attend over");
    slot.kv->store(slot.index, k, v);
    slot.kv->attend(ops_, slot.index, q, params, static_cast<uint32_t>(params.window), out);
}

model::RecurrentState Context::recurrent_state(uint32_t layer, SeqId seq) {
    const memory::HybridMemory::LayerSlot& slot = memory_->layer(layer);
    if (slot.recurrent == nullptr)
        throw Error("decode: layer " + std::to_string(layer) + " has no recurrent state");
    if (seq < 0 || static_cast<uint32_t>(seq) >= slot.recurrent->params().n_seq_max)
        throw Error("decode: sequence " + std::to_string(seq) + " is beyond the recurrent memory's sequences");
    return {slot.recurrent->conv_state(slot.recurrent_index, seq), slot.recurrent->ssm_state(slot.recurrent_index, seq)};
}

void Context::record_position(uint32_t layer, SeqId seq, int32_t pos) {
    const memory::HybridMemory::LayerSlot& slot = memory_->layer(layer);
    if (slot.recurrent == nullptr)
        throw Error("decode: layer " + std::to_string(layer) + " has no recurrent state");
    slot.recurrent->record_position(slot.recurrent_index, seq, pos);
}

bool Context::keeps_every_position(uint32_t layer, SeqId seq) {
    const memory::HybridMemory::LayerSlot& slot = memory_->layer(layer);
    return slot.recurrent != nullptr && slot.recurrent->checkpoint_open(seq);
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
    // Attention both ways must see the whole batch at once (llama.cpp
    // notes the same for gemma3's image: it must fit one ubatch).
    // Encoders attend both ways over every batch.
    const bool causal = batch.causal() && hp.causal_attn;
    if (!causal && n > static_cast<int64_t>(params_.n_ubatch))
        throw Error("decode: a batch attended both ways (an image, or an encoder's input) has " + std::to_string(n) +
                    " tokens, more than n_ubatch = " + std::to_string(params_.n_ubatch) + " (raise -ub)");
    const int32_t* orders = batch.has_rope_positions() ? batch.orders().data() : nullptr;
    // The memory cuts the batch (and refuses one it cannot take) before anything changes.
    const memory::Split split = memory_->split(
        {n, batch.positions().data(), batch.seq_masks().data(), orders, causal}, params_.n_ubatch);
    const double t0 = now_ms();
    // The other stages decode the same batch (the root's undo below is
    // each stage's own, not an operation to send).
    if (stage_ != nullptr && stage_->is_root()) stage_->begin_decode(batch);
    struct ObserverPause {
        memory::HybridMemory& memory;
        memory::SequenceObserver* saved = memory.observer();
        explicit ObserverPause(memory::HybridMemory& m) : memory(m) { memory.set_observer(nullptr); }
        ~ObserverPause() { memory.set_observer(saved); }
    } pause(*memory_);
    in_flight_.clear();
    stage_outputs_.clear();

    // A pending context shift re-rotates the cached keys first.
    apply_pending_shifts();

    // Output bookkeeping.
    const bool pooled = params_.embeddings && params_.pooling != Pooling::None;
    output_index_.assign(static_cast<size_t>(n), -1);
    n_outputs_ = 0;
    for (int64_t i = 0; i < n; ++i)
        if (batch.outputs()[i] || pooled) output_index_[i] = n_outputs_++;
    const bool want_logits = !pooled && !hp.is_encoder;  // an encoder has no output head
    const bool keeps_outputs = stage_ == nullptr || stage_->is_root();  // other stages hand them on
    if (want_logits && keeps_outputs) logits_.resize(static_cast<size_t>(n_outputs_) * hp.n_vocab);
    if (params_.embeddings && keeps_outputs) embd_.resize(static_cast<size_t>(n_outputs_) * hp.n_embd);
    features_.resize(static_cast<size_t>(n_outputs_) * feature_floats());

    for (size_t u = 0; u < split.n_ubatches(); ++u)
        if (decode_ubatch(batch, split, u) != 0) {
            // Undo the micro-batches already placed, as llama.cpp does. A
            // recurrent state has moved on and refuses (changing nothing):
            // its memory then says where the sequence stands (seq_pos_max),
            // a batch at the old positions is refused by its split, and an
            // open speculative checkpoint still restores the state before
            // the batch.
            for (int64_t k = 0; k < split.bounds[u]; ++k) {
                const int32_t i = split.entry(k), p = batch.positions()[i];
                for (uint64_t m = batch.seq_masks()[i]; m != 0; m &= m - 1) memory_->seq_rm(std::countr_zero(m), p, p + 1);
            }
            if (stage_ != nullptr) stage_->finish_decode();  // every stage stops at the same micro-batch
            return 1;
        }
    if (stage_ != nullptr) {
        stage_->finish_decode();
        if (stage_->is_root()) place_stage_outputs();
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
                           ((params_.pooling == Pooling::Cls || params_.pooling == Pooling::Rank) &&
                            (chosen_pos[s] < 0 || p < chosen_pos[s]))) {
                    std::memcpy(dst, h, hp.n_embd * sizeof(float));
                    chosen_pos[s] = p;
                }
            }
        }
        if (params_.pooling == Pooling::Mean)
            for (uint32_t s = 0; s < params_.n_seq_max; ++s)
                for (uint32_t c = 0; c < hp.n_embd && count[s] > 0; ++c)
                    pooled_[static_cast<size_t>(s) * hp.n_embd + c] /= static_cast<float>(count[s]);
        // Rank: the first token's state through the classifier head; the
        // scores replace the start of the sequence's row.
        if (params_.pooling == Pooling::Rank) {
            std::vector<float> scores(hp.n_cls_out);
            for (uint32_t s = 0; s < params_.n_seq_max; ++s) {
                if (pooled_index_[s] < 0) continue;
                float* row = pooled_.data() + static_cast<size_t>(s) * hp.n_embd;
                model_.classify(ops_, row, scores.data());
                std::copy(scores.begin(), scores.end(), row);
            }
        }
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
    if (!memory_->has_shift()) return;
    const bool long_rope = model_.long_rope_for_context(params_.n_ctx);
    memory_->apply_shift(ops_, [&](uint32_t layer) { return model_.rope_shift_params(layer, long_rope); });
}

void Context::gather_ubatch(const Batch& batch, const memory::Split& split, int64_t first, int64_t n) {
    const int64_t n_embd = batch.has_embeddings() ? batch.n_embd() : 0;
    ub_tokens_.resize(static_cast<size_t>(n));
    ub_embd_.resize(static_cast<size_t>(n * n_embd));
    ub_pos_.resize(static_cast<size_t>(n));
    ub_masks_.resize(static_cast<size_t>(n));
    ub_orders_.resize(batch.has_rope_positions() ? static_cast<size_t>(n) : 0);
    for (int64_t k = 0; k < n; ++k) {
        const int32_t i = split.entry(first + k);
        if (n_embd > 0)
            std::memcpy(ub_embd_.data() + k * n_embd, batch.embeddings().data() + i * n_embd, n_embd * sizeof(float));
        else
            ub_tokens_[k] = batch.tokens()[i];
        ub_pos_[k] = batch.positions()[i];
        ub_masks_[k] = batch.seq_masks()[i];
        if (batch.has_rope_positions()) ub_orders_[k] = batch.orders()[i];
    }
}

void Context::set_lora(model::LoraSet adapters) {
    // The other stages apply the same adapters to their own layers.
    if (stage_ != nullptr && stage_->is_root()) {
        try {
            stage_->set_lora(adapters.sources());
        } catch (...) {
            // Every stage goes back to the adapters this one keeps applying.
            try {
                stage_->set_lora(lora_.sources());
            } catch (...) {
            }
            throw;
        }
    }
    lora_ = std::move(adapters);
    lora_rows_sets_.clear();  // the mixed table may hold the set replaced
}

namespace {
// The most LoRA set identities kept as known good (check_lora_reached).
constexpr size_t kMaxVerifiedLoraSets = 256;
}  // namespace

void Context::set_sequence_lora(SeqId seq, model::LoraSet adapters) {
    if (!mixes_lora_sets()) throw Error("LoRA: per-sequence adapters are not supported across pipeline stages");
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("LoRA: sequence id " + std::to_string(seq) + " is beyond n_seq_max = " +
                    std::to_string(params_.n_seq_max));
    seq_lora_.resize(params_.n_seq_max);
    auto& own = seq_lora_[static_cast<size_t>(seq)];
    if (!own) ++n_seq_lora_;
    own = std::make_unique<model::LoraSet>(std::move(adapters));
    lora_rows_sets_.clear();  // the mixed table may point at the set replaced
}

void Context::clear_sequence_lora(SeqId seq) {
    if (seq < 0 || static_cast<size_t>(seq) >= seq_lora_.size() || !seq_lora_[static_cast<size_t>(seq)]) return;
    seq_lora_[static_cast<size_t>(seq)].reset();
    --n_seq_lora_;
    lora_rows_sets_.clear();
}

const model::LoraSet& Context::lora_for(SeqId seq) const {
    if (seq >= 0 && static_cast<size_t>(seq) < seq_lora_.size() && seq_lora_[static_cast<size_t>(seq)])
        return *seq_lora_[static_cast<size_t>(seq)];
    return lora_;
}

void Context::select_lora(model::ForwardInput& in, const uint64_t* seq_masks, int64_t n) {
    ub_lora_sets_.clear();
    if (n_seq_lora_ == 0 || seq_masks == nullptr) {
        ub_lora_sets_.push_back(&lora_);  // the usual case: one set for every row
    } else {
        ub_lora_row_set_.resize(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) {
            const model::LoraSet* set = nullptr;
            for (uint64_t mask = seq_masks[k]; mask != 0; mask &= mask - 1) {
                const model::LoraSet* own = &lora_for(static_cast<SeqId>(std::countr_zero(mask)));
                if (set != nullptr && own->identity() != set->identity())
                    throw Error("decode: a batch entry belongs to sequences under different LoRA adapters or scales");
                set = own;
            }
            if (set == nullptr) set = &lora_;
            size_t index = 0;
            while (index < ub_lora_sets_.size() && ub_lora_sets_[index]->identity() != set->identity()) ++index;
            if (index == ub_lora_sets_.size()) {
                if (index == model::LoraRows::kMaxSets)
                    throw Error("decode: the batch mixes more than " + std::to_string(model::LoraRows::kMaxSets) +
                                " LoRA sets");
                ub_lora_sets_.push_back(set);
            }
            ub_lora_row_set_[static_cast<size_t>(k)] = static_cast<uint8_t>(index);
        }
    }
    lora_checking_ = false;
    for (const model::LoraSet* set : ub_lora_sets_)
        if (set->identity() != 0 &&
            std::find(lora_verified_.begin(), lora_verified_.end(), set->identity()) == lora_verified_.end())
            lora_checking_ = true;
    lora_reached_.clear();
    in.lora_applied = lora_checking_ ? &lora_reached_ : nullptr;
    if (ub_lora_sets_.size() == 1) {
        in.adapters = ub_lora_sets_[0]->empty() ? nullptr : ub_lora_sets_[0];
        return;
    }
    if (lora_rows_sets_ != ub_lora_sets_) {
        lora_rows_ = model::LoraRows(ub_lora_sets_);
        lora_rows_sets_ = ub_lora_sets_;
    }
    in.lora_rows = &lora_rows_;
    in.lora_row_set = ub_lora_row_set_.data();
}

void Context::check_lora_reached() {
    std::sort(lora_reached_.begin(), lora_reached_.end());
    lora_reached_.erase(std::unique(lora_reached_.begin(), lora_reached_.end()), lora_reached_.end());
    // A pipeline stage reaches only the adapted layers it computes.
    size_t missing = 0;
    std::vector<const model::Linear*> expected;
    for (const model::LoraSet* set : ub_lora_sets_)
        for (const model::Linear* lin : set->adapted())
            if (model_.holds_all_layers() || model_.computes_with(lin)) expected.push_back(lin);
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    for (const model::Linear* lin : expected)
        missing += std::binary_search(lora_reached_.begin(), lora_reached_.end(), lin) ? 0 : 1;
    lora_reached_.clear();
    if (missing == 0) {
        lora_checking_ = false;
        // Bounded: requests may bring any number of distinct scales; one
        // forgotten is only checked again.
        if (lora_verified_.size() >= kMaxVerifiedLoraSets) lora_verified_.clear();
        for (const model::LoraSet* set : ub_lora_sets_)
            if (std::find(lora_verified_.begin(), lora_verified_.end(), set->identity()) == lora_verified_.end())
                lora_verified_.push_back(set->identity());
        return;
    }
    throw Error("a LoRA adapter adapts " + std::to_string(missing) + " layer(s) that the " +
                model_.hparams().arch_name +
                " forward pass does not apply adapters to (not supported for this architecture)");
}

int Context::decode_ubatch(const Batch& batch, const memory::Split& split, size_t u) {
    const model::HParams& hp = model_.hparams();
    const int64_t first = split.bounds[u], n = split.bounds[u + 1] - first;
    // A slice of the batch is read in place; a regrouped micro-batch is gathered.
    const bool in_place = split.in_order;
    if (!in_place) gather_ubatch(batch, split, first, n);
    const bool rope4 = batch.has_rope_positions();
    const bool causal = batch.causal() && hp.causal_attn;
    const memory::UbatchView view = in_place
        ? memory::UbatchView{n, batch.positions().data() + first, batch.seq_masks().data() + first,
                             rope4 ? batch.orders().data() + first : nullptr, causal}
        : memory::UbatchView{n, ub_pos_.data(), ub_masks_.data(), rope4 ? ub_orders_.data() : nullptr, causal};
    if (!memory_->place(view)) return 1;
    if (rope4) {
        // The batch keeps [t, h, w, e] per entry; the rope reads one stream per section.
        ub_rope_.resize(static_cast<size_t>(4 * n));
        for (int64_t k = 0; k < n; ++k) {
            const int32_t* p = batch.rope_positions().data() + static_cast<size_t>(split.entry(first + k)) * 4;
            for (int64_t sec = 0; sec < 4; ++sec) ub_rope_[static_cast<size_t>(sec * n + k)] = p[sec];
        }
    }

    out_rows_.clear();
    int32_t first_out = -1;
    for (int64_t k = 0; k < n; ++k)
        if (output_index_[split.entry(first + k)] >= 0) {
            if (first_out < 0) first_out = output_index_[split.entry(first + k)];
            out_rows_.push_back(static_cast<int32_t>(k));
        }
    model::ForwardInput in;
    in.n_tokens = n;
    if (batch.has_embeddings())
        in.embd = in_place ? batch.embeddings().data() + first * hp.n_embd : ub_embd_.data();
    else
        in.tokens = in_place ? batch.tokens().data() + first : ub_tokens_.data();
    in.positions = view.positions;
    in.rope_positions = rope4 ? ub_rope_.data() : nullptr;
    in.seq_masks = view.seq_masks;
    in.output_rows = out_rows_.data();
    in.n_outputs = static_cast<int64_t>(out_rows_.size());
    in.want_logits = !(params_.embeddings && params_.pooling != Pooling::None) && !hp.is_encoder;
    in.want_hidden = params_.embeddings;
    in.long_rope = model_.long_rope_for_context(params_.n_ctx);
    in.capture_layers = params_.capture_layers.data();
    in.n_capture = params_.capture_layers.size();
    select_lora(in, view.seq_masks, n);
    const size_t n_feat = feature_floats();
    const bool any_out = first_out >= 0;
    if (stage_ != nullptr) {
        forward_stage(in, split, first);
        return 0;
    }
    if (in_place) {
        // The slice's outputs are consecutive output rows: written in place.
        const auto out0 = static_cast<size_t>(first_out);
        float* logits = in.want_logits && any_out ? logits_.data() + out0 * hp.n_vocab : nullptr;
        float* hidden = in.want_hidden && any_out ? embd_.data() + out0 * hp.n_embd : nullptr;
        in.features = n_feat > 0 && any_out ? features_.data() + out0 * n_feat : nullptr;
        model_.forward(ops_, ws_, in, *this, logits, hidden);
        if (lora_checking_ && any_out && in.want_logits) check_lora_reached();
        return 0;
    }
    ub_logits_.resize(in.want_logits ? out_rows_.size() * hp.n_vocab : 0);
    ub_hidden_.resize(in.want_hidden ? out_rows_.size() * hp.n_embd : 0);
    ub_features_.resize(out_rows_.size() * n_feat);
    in.features = n_feat > 0 && any_out ? ub_features_.data() : nullptr;
    model_.forward(ops_, ws_, in, *this, in.want_logits && any_out ? ub_logits_.data() : nullptr,
                   in.want_hidden && any_out ? ub_hidden_.data() : nullptr);
    if (lora_checking_ && any_out && in.want_logits) check_lora_reached();
    for (size_t r = 0; r < out_rows_.size(); ++r) {
        const auto row = static_cast<size_t>(output_index_[split.entry(first + out_rows_[r])]);
        if (in.want_logits)
            std::memcpy(logits_.data() + row * hp.n_vocab, ub_logits_.data() + r * hp.n_vocab, hp.n_vocab * sizeof(float));
        if (in.want_hidden)
            std::memcpy(embd_.data() + row * hp.n_embd, ub_hidden_.data() + r * hp.n_embd, hp.n_embd * sizeof(float));
        if (n_feat > 0)
            std::memcpy(features_.data() + row * n_feat, ub_features_.data() + r * n_feat, n_feat * sizeof(float));
    }
    return 0;
}

void Context::forward_stage(model::ForwardInput& in, const memory::Split& split, int64_t first) {
    const model::HParams& hp = model_.hparams();
    const model::LayerRange layers = model_.layers();
    const auto n_stream = static_cast<size_t>(in.n_tokens * hp.n_embd);
    const auto n_out = static_cast<size_t>(in.n_outputs);
    // Captured features travel with the stream: each stage fills the columns
    // of the capture layers it runs, and the last stage sends the whole
    // [n_out][n_capture][n_embd] block back to the root with the output rows.
    const size_t n_feat = n_out * feature_floats();
    if (layers.begin > 0) {
        stream_in_.resize(n_stream + n_feat);
        stage_->receive_stream(stream_in_);
        in.stream_in = stream_in_.data();
    }
    const auto carry_features = [&](float* dst) {
        if (n_feat == 0) return;
        if (layers.begin > 0) std::memcpy(dst, stream_in_.data() + n_stream, n_feat * sizeof(float));
        in.features = dst;
    };
    const size_t row_floats = (in.want_logits ? hp.n_vocab : 0) + (in.want_hidden ? hp.n_embd : 0);
    if (layers.end < hp.n_layer) {
        std::vector<float>& sent = in_flight_.emplace_back(n_stream + n_feat);
        carry_features(sent.data() + n_stream);
        in.stream_out = sent.data();
        model_.forward(ops_, ws_, in, *this, nullptr, nullptr);
        if (lora_checking_) check_lora_reached();  // every layer here ran
        stage_->send_stream(sent);
        if (stage_->is_root() && n_out > 0) {
            StageOutputs& out = stage_outputs_.emplace_back();
            for (size_t r = 0; r < n_out; ++r) out.rows.push_back(output_index_[split.entry(first + out_rows_[r])]);
            out.data.resize(n_out * row_floats + n_feat);
            stage_->receive_outputs(out.data);
        }
        return;
    }
    // The last stage (a root that holds every layer has no stage).
    if (n_out == 0) {
        model_.forward(ops_, ws_, in, *this, nullptr, nullptr);
        return;
    }
    std::vector<float>& out = in_flight_.emplace_back(n_out * row_floats + n_feat);
    float* logits = in.want_logits ? out.data() : nullptr;
    float* hidden = in.want_hidden ? out.data() + (in.want_logits ? n_out * hp.n_vocab : 0) : nullptr;
    carry_features(out.data() + n_out * row_floats);
    model_.forward(ops_, ws_, in, *this, logits, hidden);
    if (lora_checking_ && in.want_logits) check_lora_reached();
    stage_->send_outputs(out);
}

void Context::place_stage_outputs() {
    const model::HParams& hp = model_.hparams();
    const bool want_logits = !(params_.embeddings && params_.pooling != Pooling::None);
    const size_t n_feat = feature_floats();
    for (const StageOutputs& out : stage_outputs_) {
        const size_t n_out = out.rows.size();
        const float* hidden = out.data.data() + (want_logits ? n_out * hp.n_vocab : 0);
        const float* features = hidden + (params_.embeddings ? n_out * hp.n_embd : 0);
        for (size_t r = 0; r < n_out; ++r) {
            const auto row = static_cast<size_t>(out.rows[r]);
            if (want_logits)
                std::memcpy(logits_.data() + row * hp.n_vocab, out.data.data() + r * hp.n_vocab, hp.n_vocab * sizeof(float));
            if (params_.embeddings)
                std::memcpy(embd_.data() + row * hp.n_embd, hidden + r * hp.n_embd, hp.n_embd * sizeof(float));
            if (n_feat > 0)
                std::memcpy(features_.data() + row * n_feat, features + r * n_feat, n_feat * sizeof(float));
        }
    }
    stage_outputs_.clear();
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

void Context::set_capture_layers(std::vector<uint32_t> layers) {
    const uint32_t n_layer = model_.hparams().n_layer;
    for (uint32_t l : layers)
        if (l > n_layer)
            throw Error("context: capture layer " + std::to_string(l) + " is beyond the model's " +
                        std::to_string(n_layer) + " layers");
    // Every stage captures the layers it runs (the features travel with the
    // stream to the root), so every stage needs the list.
    if (stage_ != nullptr && stage_->is_root() && layers != params_.capture_layers) stage_->set_capture_layers(layers);
    params_.capture_layers = std::move(layers);
}

size_t Context::feature_floats() const { return params_.capture_layers.size() * model_.hparams().n_embd; }

std::span<const float> Context::features(int32_t i) const {
    const size_t n_feat = feature_floats();
    const int32_t row = i < 0 ? n_outputs_ + i : (static_cast<size_t>(i) < output_index_.size() ? output_index_[i] : -1);
    if (n_feat == 0 || row < 0 || row >= n_outputs_)
        throw Error("features: batch entry " + std::to_string(i) + " has no captured features");
    return {features_.data() + static_cast<size_t>(row) * n_feat, n_feat};
}

std::span<const float> Context::embeddings_seq(SeqId seq) const {
    const uint32_t n_embd = model_.hparams().n_embd;
    if (params_.pooling == Pooling::None || seq < 0 || static_cast<size_t>(seq) >= pooled_index_.size() ||
        pooled_index_[seq] < 0)
        throw Error("embeddings: no pooled embedding for sequence " + std::to_string(seq));
    const uint32_t n = params_.pooling == Pooling::Rank ? model_.hparams().n_cls_out : n_embd;
    return {pooled_.data() + static_cast<size_t>(seq) * n_embd, n};
}

void Context::memory_clear() { memory_->clear(); }
bool Context::memory_seq_rm(SeqId seq, int32_t p0, int32_t p1) { return memory_->seq_rm(seq, p0, p1); }
bool Context::memory_seq_cp(SeqId src, SeqId dst, int32_t p0, int32_t p1) { return memory_->seq_cp(src, dst, p0, p1); }
bool Context::memory_seq_keep(SeqId seq) { return memory_->seq_keep(seq); }
bool Context::memory_seq_add(SeqId seq, int32_t p0, int32_t p1, int32_t delta) {
    return memory_->seq_add(seq, p0, p1, delta);
}
int32_t Context::memory_seq_pos_max(SeqId seq) const { return memory_->seq_pos_max(seq); }
// The full cache remembers everything, a window only its last positions: the lowest.
int32_t Context::memory_seq_pos_min(SeqId seq) const { return memory_->seq_pos_min(seq); }
size_t Context::memory_bytes() const { return memory_->memory_bytes(); }

}  // namespace cria::runtime
