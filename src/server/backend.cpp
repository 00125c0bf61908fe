#include "cria/server/backend.h"

#include "cria/core/error.h"

namespace cria::server {

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

std::vector<std::unique_ptr<spec::Drafter>> Backend::make_drafters(const spec::SpecParams&) {
    throw Error("speculative decoding needs a backend with a KV cache");
}

void Backend::set_capture_layers(const std::vector<uint32_t>& layers) {
    if (!layers.empty()) throw Error("this backend cannot capture target features for the drafters");
}

spec::FeaturesView Backend::features(size_t, size_t, int32_t) const { return {}; }

}  // namespace cria::server
