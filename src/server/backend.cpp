#include "cria/server/backend.h"

#include "cria/core/error.h"

namespace cria::server {

size_t Backend::save_sequence_with_media(int32_t seq, std::span<const TokenId> tokens, const std::string& path,
                                         std::span<const runtime::SavedMedia> media) {
    if (!media.empty()) throw Error("this backend cannot save a slot holding images");
    return save_sequence(seq, tokens, path);
}

std::vector<TokenId> Backend::restore_sequence_with_media(int32_t seq, const std::string& path,
                                                          std::vector<runtime::SavedMedia>& media) {
    media.clear();
    return restore_sequence(seq, path);
}

void Backend::decode_image(int32_t, int32_t, const media::ImageChunk&, std::vector<float>*) {
    throw Error("this backend takes no images");
}

size_t Backend::save_sequence(int32_t, std::span<const TokenId>, const std::string&) {
    throw Error("slot files need a backend with a KV cache (this one keeps no state to save)");
}

std::vector<TokenId> Backend::restore_sequence(int32_t, const std::string&) {
    throw Error("slot files need a backend with a KV cache (this one keeps no state to restore)");
}

std::vector<uint8_t> Backend::snapshot_sequence(int32_t, std::span<const TokenId>) {
    throw Error("turn checkpoints need a backend with a memory (this one keeps no state to save)");
}

std::vector<TokenId> Backend::restore_snapshot(int32_t, std::span<const uint8_t>) {
    throw Error("turn checkpoints need a backend with a memory (this one keeps no state to restore)");
}

std::vector<uint8_t> Backend::sequence_state(int32_t, std::span<const TokenId>) {
    throw Error("the prompt cache needs a backend with a KV cache (this one keeps no state to save)");
}

std::vector<TokenId> Backend::load_sequence_state(int32_t, std::span<const uint8_t>) {
    throw Error("the prompt cache needs a backend with a KV cache (this one keeps no state to restore)");
}

void Backend::set_lora_scales(const std::vector<float>& scales) {
    if (!scales.empty()) throw Error("this backend has no LoRA adapters");
}

void Backend::set_sequence_lora_scales(int32_t, const std::vector<float>&) {
    throw Error("this backend cannot apply LoRA scales per sequence");
}

std::vector<std::unique_ptr<spec::Drafter>> Backend::make_drafters(const spec::SpecParams&) {
    throw Error("speculative decoding needs a backend with a KV cache");
}

void Backend::set_capture_layers(const std::vector<uint32_t>& layers) {
    if (!layers.empty()) throw Error("this backend cannot capture target features for the drafters");
}

spec::FeaturesView Backend::features(size_t, size_t, int32_t) const { return {}; }

std::string Backend::context_shift_refusal() const { return "this backend cannot shift a sequence's positions"; }

uint64_t Backend::seq_sharing(int32_t, int32_t, int32_t) const { return 0; }

void Backend::seq_shift(int32_t, int32_t, int32_t, int32_t) { throw Error(context_shift_refusal()); }

bool Backend::seq_copy_prefix(int32_t, int32_t dst, int32_t) {
    seq_keep_prefix(dst, 0);
    return false;
}

std::vector<float> Backend::rerank(const std::string&, const std::vector<std::string>&, int64_t&) {
    throw Error("this server has no reranker: load a reranking model (rank pooling, a classifier head)");
}

}  // namespace cria::server
