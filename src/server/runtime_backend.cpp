#include "cria/runtime/context_shift.h"
#include "cria/server/runtime_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/media/eval_prompt.h"
#include "cria/model/lora.h"
#include "cria/model/model.h"
#include "cria/runtime/pipeline.h"
#include "cria/runtime/context.h"
#include "cria/runtime/embedding.h"
#include "cria/spec/speculative.h"

namespace cria::server {

RuntimeBackend::RuntimeBackend(const std::string& model_path, const RuntimeBackendParams& params) : params_(params) {
    if (params_.n_seq <= 0 || params_.n_seq > 64) throw Error("the number of slots must be 1..64");
    if (params_.n_batch <= 0) params_.n_batch = 512;
    model_ = runtime::load_model(model_path, params_.load_mode, params_.repack);
    vocab_ = std::make_unique<vocab::Vocab>(vocab::Vocab::from_gguf(model_->file()));
    const auto& hp = model_->hparams();
    if (params_.n_ctx <= 0) params_.n_ctx = static_cast<int32_t>(hp.n_ctx_train) * params_.n_seq;
    n_ctx_per_seq_ = params_.n_ctx / params_.n_seq;
    if (n_ctx_per_seq_ < 8) throw Error("the context is too small for " + std::to_string(params_.n_seq) + " slots");
    runtime::ContextParams cp;
    cp.n_ctx = static_cast<uint32_t>(params_.n_ctx);
    cp.n_batch = static_cast<uint32_t>(params_.n_batch);
    cp.n_ubatch = static_cast<uint32_t>(params_.n_ubatch > 0 ? params_.n_ubatch : params_.n_batch);
    cp.n_seq_max = static_cast<uint32_t>(params_.n_seq);
    cp.n_threads = params_.n_threads;
    cp.type_k = params_.type_k;
    cp.type_v = params_.type_v;
    // An encoder generates nothing: its slots' context keeps hidden states
    // (the server refuses completions; embeddings and rerank use their own).
    cp.embeddings = hp.is_encoder;
    if (!params_.pooling.empty()) runtime::parse_pooling(params_.pooling);  // a bad name fails at start
    ctx_ = std::make_unique<runtime::Context>(*model_, cp);
    std::vector<float> scales;
    for (const auto& [path, scale] : params_.lora) {
        adapters_.push_back(model::LoraAdapter::load(path, *model_));
        scales.push_back(scale);
    }
    set_lora_scales(scales);
}

std::vector<Backend::LoraAdapterInfo> RuntimeBackend::lora_adapters() const {
    std::vector<LoraAdapterInfo> out;
    std::lock_guard lock(lora_mutex_);
    for (size_t i = 0; i < adapters_.size(); ++i) out.push_back({adapters_[i]->path(), lora_scales_[i]});
    return out;
}

void RuntimeBackend::set_lora_scales(const std::vector<float>& scales) {
    if (scales.size() != adapters_.size())
        throw Error("expected " + std::to_string(adapters_.size()) + " LoRA scales, got " + std::to_string(scales.size()));
    model::LoraSet set;
    for (size_t i = 0; i < adapters_.size(); ++i) set.add(*adapters_[i], scales[i]);
    ctx_->set_lora(std::move(set));
    std::lock_guard lock(lora_mutex_);
    lora_scales_ = scales;
}

bool RuntimeBackend::mixes_lora_scales() const { return !adapters_.empty() && ctx_->mixes_lora_sets(); }

void RuntimeBackend::set_sequence_lora_scales(int32_t seq, const std::vector<float>& scales) {
    if (scales.size() != adapters_.size())
        throw Error("expected " + std::to_string(adapters_.size()) + " LoRA scales, got " + std::to_string(scales.size()));
    model::LoraSet set;
    for (size_t i = 0; i < adapters_.size(); ++i) set.add(*adapters_[i], scales[i]);
    ctx_->set_sequence_lora(seq, std::move(set));
}

RuntimeBackend::~RuntimeBackend() = default;

int32_t RuntimeBackend::n_vocab() const { return static_cast<int32_t>(model_->hparams().n_vocab); }

std::string RuntimeBackend::model_name() const {
    return model_->file().get_string("general.name", model_->hparams().arch_name);
}

std::string RuntimeBackend::chat_template() const {
    return model_->file().get_string("tokenizer.chat_template", "");
}

std::string RuntimeBackend::describe_settings() const {
    const runtime::ContextParams& cp = ctx_->params();
    char packed[32];
    std::snprintf(packed, sizeof packed, "%.1f MiB", static_cast<double>(model_->packed_bytes()) / 1048576.0);
    return "n_ctx " + std::to_string(ctx_->n_ctx()) + ", batch " + std::to_string(cp.n_batch) + "/" +
           std::to_string(cp.n_ubatch) + ", KV cache " + std::string(element_type_name(cp.type_k)) + "/" +
           std::string(element_type_name(cp.type_v)) + ", loaded with " +
           std::string(gguf::load_mode_name(model_->file().load_mode())) + ", " + packed + " of weights packed" +
           (params_.repack ? "" : " (--no-repack)");
}

bool RuntimeBackend::mrope() const { return model_->hparams().rope_order == model::RopeOrder::MRope; }

void RuntimeBackend::decode_image(int32_t seq, int32_t pos, const media::ImageChunk& image,
                                  std::vector<float>* features) {
    // pos: the image's first position; under M-RoPE its tokens get their
    // grid sections and the image takes max(nx, ny) positions.
    media::eval_image_chunk(*ctx_, image, seq, pos, mrope(), false,
                            features && !ctx_->params().capture_layers.empty() ? features : nullptr);
    output_entries_.clear();  // the image's rows are no logit rows of a decode()
}

void RuntimeBackend::decode(std::span<const BatchToken> batch, std::vector<float>& logits) {
    runtime::Batch b;
    for (const BatchToken& t : batch) {
        if (t.pos >= n_ctx_per_seq_) throw Error("the slot's context is full");
        b.add(t.token, t.pos, {t.seq}, t.logits);
    }
    if (ctx_->decode(b) != 0) throw Error("the KV cache has no room for this batch");
    logits.clear();
    output_entries_.clear();
    const size_t nv = static_cast<size_t>(n_vocab());
    for (size_t i = 0; i < batch.size(); ++i) {
        if (!batch[i].logits) continue;
        output_entries_.push_back(static_cast<int32_t>(i));
        auto row = ctx_->logits(static_cast<int32_t>(i));
        if (row.size() != nv) throw Error("unexpected logit row size");
        logits.insert(logits.end(), row.begin(), row.end());
    }
}

void RuntimeBackend::set_capture_layers(const std::vector<uint32_t>& layers) { ctx_->set_capture_layers(layers); }

spec::FeaturesView RuntimeBackend::features(size_t first_row, size_t n_rows, int32_t pos0) const {
    const size_t n_layers = ctx_->params().capture_layers.size();
    if (n_layers == 0 || n_rows == 0) return {};
    if (first_row + n_rows > output_entries_.size()) throw Error("features: rows beyond the last decode's outputs");
    // The context keeps the streams in output-row order: consecutive rows are contiguous.
    const float* data = ctx_->features(output_entries_[first_row]).data();
    return {data, n_rows, n_layers, ctx_->model().hparams().n_embd, pos0};
}

bool RuntimeBackend::seq_keep_prefix(int32_t seq, int32_t keep) { return ctx_->memory_seq_rm(seq, keep, -1); }

std::string RuntimeBackend::context_shift_refusal() const {
    return runtime::context_shift_refusal(*ctx_, static_cast<uint32_t>(n_ctx_per_seq_));
}

uint64_t RuntimeBackend::seq_sharing(int32_t seq, int32_t p0, int32_t p1) const {
    return runtime::sequences_sharing(*ctx_, seq, p0, p1);
}

void RuntimeBackend::seq_shift(int32_t seq, int32_t n_past, int32_t n_keep, int32_t n_discard) {
    runtime::shift_context(*ctx_, seq, n_past, n_keep, n_discard, static_cast<uint32_t>(n_ctx_per_seq_));
}

bool RuntimeBackend::seq_copy_prefix(int32_t src, int32_t dst, int32_t n) {
    ctx_->memory_seq_rm(dst, -1, -1);  // a whole sequence: no memory refuses that
    // Only a source that holds positions 0..n-1 (and a memory whose copy is of
    // those positions alone) can lend them.
    if (n <= 0 || src == dst || ctx_->memory_seq_pos_min(src) != 0 || ctx_->memory_seq_pos_max(src) < n - 1) return false;
    if (!ctx_->memory().can_seq_cp(src, dst, 0, n) || !ctx_->memory_seq_cp(src, dst, 0, n)) return false;
    if (ctx_->memory_seq_pos_min(dst) != 0 || ctx_->memory_seq_pos_max(dst) != n - 1) {
        ctx_->memory_seq_rm(dst, -1, -1);  // e.g. a recurrent state: it was the whole history
        return false;
    }
    return true;
}

bool RuntimeBackend::checkpoint_begin(int32_t seq, int32_t n_positions) {
    return ctx_->memory().checkpoint_begin(seq, n_positions);
}

bool RuntimeBackend::checkpoint_commit(int32_t seq, int32_t n_accepted) {
    return ctx_->memory().checkpoint_commit(seq, n_accepted);
}

size_t RuntimeBackend::save_sequence(int32_t seq, std::span<const TokenId> tokens, const std::string& path) {
    return save_sequence_with_media(seq, tokens, path, {});
}

std::vector<TokenId> RuntimeBackend::restore_sequence(int32_t seq, const std::string& path) {
    std::vector<runtime::SavedMedia> media;
    auto tokens = restore_sequence_with_media(seq, path, media);
    if (!media.empty()) {
        ctx_->memory_seq_rm(seq, -1, -1);
        throw Error("the slot file holds images");
    }
    return tokens;
}

size_t RuntimeBackend::save_sequence_with_media(int32_t seq, std::span<const TokenId> tokens, const std::string& path,
                                                std::span<const runtime::SavedMedia> media) {
    const size_t n = ctx_->save_sequence(seq, tokens, path, media);
    if (n != tokens.size()) throw Error("the slot's cache does not hold its tokens");
    return n;
}

namespace {

// A slot's tokens sit at positions 0..n-1. Only a hand-made file with a
// valid checksum can break that, and then the slot is emptied.
void check_restored_positions(runtime::Context& ctx, int32_t seq, size_t n_tokens) {
    const auto n = static_cast<int32_t>(n_tokens);
    if (ctx.memory_seq_pos_min(seq) != (n > 0 ? 0 : -1) || ctx.memory_seq_pos_max(seq) != n - 1) {
        const bool cleared = ctx.memory_seq_rm(seq, -1, -1);  // a whole sequence: no memory refuses that
        throw Error("the slot file's cells are not its tokens' positions 0.." + std::to_string(n - 1) +
                    (cleared ? "" : " (and the slot could not be emptied)"));
    }
}

}  // namespace

std::vector<TokenId> RuntimeBackend::restore_sequence_with_media(int32_t seq, const std::string& path,
                                                                 std::vector<runtime::SavedMedia>& media) {
    auto tokens = ctx_->restore_sequence(seq, path, static_cast<uint32_t>(n_ctx_per_seq_ - 1), &media);
    check_restored_positions(*ctx_, seq, tokens.size());
    return tokens;
}

std::vector<uint8_t> RuntimeBackend::sequence_state(int32_t seq, std::span<const TokenId> tokens) {
    size_t n = 0;
    auto state = ctx_->sequence_state(seq, tokens, {}, &n);
    if (n != tokens.size()) {
        ctx_->drop_sequence_state(state);
        throw Error("the slot's cache does not hold its tokens");
    }
    return state;
}

std::vector<TokenId> RuntimeBackend::load_sequence_state(int32_t seq, std::span<const uint8_t> state) {
    auto tokens = ctx_->load_sequence_state(seq, state, static_cast<uint32_t>(n_ctx_per_seq_ - 1));
    check_restored_positions(*ctx_, seq, tokens.size());
    return tokens;
}

void RuntimeBackend::drop_sequence_state(std::span<const uint8_t> state) { ctx_->drop_sequence_state(state); }

bool RuntimeBackend::wants_turn_checkpoints() const {
    // Any layer with a recurrent state makes the whole memory refuse to drop a suffix.
    const memory::HybridMemory& m = ctx_->memory();
    for (uint32_t l = 0; l < m.n_layer(); ++l)
        if (m.layer(l).recurrent) return true;
    return false;
}

std::vector<uint8_t> RuntimeBackend::snapshot_sequence(int32_t seq, std::span<const TokenId> tokens) {
    size_t n_saved = 0;
    auto state = ctx_->sequence_state(seq, tokens, {}, &n_saved);
    if (n_saved != tokens.size()) {
        ctx_->drop_sequence_state(state);
        throw Error("the slot's cache does not hold its tokens");
    }
    return state;
}

std::vector<TokenId> RuntimeBackend::restore_snapshot(int32_t seq, std::span<const uint8_t> state) {
    return ctx_->load_sequence_state(seq, state, static_cast<uint32_t>(n_ctx_per_seq_ - 1));
}

std::vector<std::unique_ptr<spec::Drafter>> RuntimeBackend::make_drafters(const spec::SpecParams& params) {
    // One ngram-mod pool and one loaded draft model for every slot; each
    // slot's draft model drafts in a context of its own, the size of a slot.
    drafter_resources_.draft_n_ctx = static_cast<uint32_t>(n_ctx_per_seq_);
    return spec::make_drafters(params, *ctx_, *vocab_, &drafter_resources_);
}

int32_t RuntimeBackend::max_embedding_tokens() const {
    // One sequence of the model's training context, at most 2048 (runtime::Embedder's default).
    const auto n_train = static_cast<int32_t>(model_->hparams().n_ctx_train);
    return std::min<int32_t>(n_train > 0 ? n_train : 2048, 2048);
}

std::string RuntimeBackend::pooling_name() const {
    const runtime::Pooling p = params_.pooling.empty()
                                   ? runtime::model_pooling(model_->hparams(), runtime::Pooling::Mean)
                                   : runtime::parse_pooling(params_.pooling);
    return runtime::pooling_name(p);
}

bool RuntimeBackend::generates_text() const { return !model_->hparams().is_encoder && !params_.embedding_only; }

namespace {

// The embedder of `pooling`, made on first use (and again when the pooling differs).
runtime::Embedder& embedder_for(std::unique_ptr<runtime::Embedder>& e, const model::Model& model,
                                runtime::Pooling pooling, int n_threads, int32_t max_tokens) {
    if (!e || e->pooling() != pooling)
        e = std::make_unique<runtime::Embedder>(model, pooling, n_threads, static_cast<uint32_t>(max_tokens));
    return *e;
}

}  // namespace

std::vector<float> RuntimeBackend::embed(std::span<const TokenId> tokens) {
    std::lock_guard lock(embed_mutex_);
    const runtime::Pooling pooling = runtime::parse_pooling(pooling_name());
    if (pooling == runtime::Pooling::Rank)
        throw Error("this server pools for reranking (rank): use /v1/rerank, or start it with another --pooling");
    if (pooling == runtime::Pooling::None)
        throw Error("Pooling type 'none' is not OAI compatible. Please use a different pooling type");
    runtime::Embedder& e = embedder_for(embedder_, *model_, pooling, params_.n_threads, max_embedding_tokens());
    return std::move(e.embed(tokens).front());
}

std::vector<std::vector<float>> RuntimeBackend::embed_rows(std::span<const TokenId> tokens) {
    if (pooling_name() != "none") return {embed(tokens)};
    std::lock_guard lock(embed_mutex_);
    runtime::Embedder& e =
        embedder_for(embedder_, *model_, runtime::Pooling::None, params_.n_threads, max_embedding_tokens());
    return e.embed(tokens);  // llama-server normalises only pooled rows
}

std::vector<float> RuntimeBackend::rerank(const std::string& query, const std::vector<std::string>& documents,
                                          int64_t& n_tokens) {
    std::lock_guard lock(embed_mutex_);
    if (pooling_name() != "rank")
        throw Error("this server does not rerank: its pooling is " + pooling_name() +
                    " (a reranker's file asks for rank; or start it with --pooling rank)");
    runtime::Embedder& e =
        embedder_for(embedder_, *model_, runtime::Pooling::Rank, params_.n_threads, max_embedding_tokens());
    std::vector<float> scores;
    n_tokens = 0;
    for (const std::string& doc : documents) {
        const auto tokens = runtime::rerank_tokens(*model_, *vocab_, query, doc);
        n_tokens += static_cast<int64_t>(tokens.size());
        scores.push_back(e.embed(tokens).front().at(0));
    }
    return scores;
}

}  // namespace cria::server
