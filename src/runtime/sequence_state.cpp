// Context::save_sequence / restore_sequence: one sequence's state in a file.
//
// Layout (little-endian, as the host writes it):
//   "CRIASEQ" '\0'  u32 version (2)
//   model: u32 n_layer, n_embd_k, n_embd_v, type_k, type_v, n_vocab; u64 hparams hash
//   u32 n_tokens, i32 tokens[n_tokens]
//   u32 n_sections, then per section (one per memory, memory/state_section.h):
//     u32 tag, u32 version, u64 size, payload (the memory's own format:
//     for a KV cache the positions and K/V rows of its cells)
//   u64 FNV-1a checksum of every byte before it
// Version 1 had a fixed list of one or two KV caches instead of sections.
// The reader checks the header before it reads further, bounds every count by
// what this context can hold (so a hostile file cannot make it allocate
// much), lets every memory check its own section, and changes the memory
// only once the whole file has been verified.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cria/core/error.h"
#include "cria/runtime/context.h"

namespace cria::runtime {
namespace {

// Writes `bytes` to a fresh temporary file beside `path` (mkstemp: created
// exclusively, so a planted symlink or file is never followed or reused),
// then renames it over `path` atomically. Throws cria::Error, leaving `path`
// as it was.
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::string tmp = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw Error("cannot create a temporary file beside " + path + ": " + std::strerror(errno));
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    const bool written = done == bytes.size() && ::fsync(fd) == 0;
    ::close(fd);
    if (!written) {
        ::unlink(tmp.c_str());
        throw Error("writing " + tmp + " failed");
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw Error("cannot rename " + tmp + " to " + path + ": " + why);
    }
}

constexpr char kMagic[8] = {'C', 'R', 'I', 'A', 'S', 'E', 'Q', '\0'};
constexpr uint32_t kVersion = 2;

struct Fnv1a {
    uint64_t h = 1469598103934665603ull;
    void add(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
    template <typename T>
    void add_value(T v) { add(&v, sizeof v); }
};

// What must agree for cached keys and values to mean the same thing.
uint64_t hparams_hash(const model::HParams& hp) {
    Fnv1a f;
    f.add(hp.arch_name.data(), hp.arch_name.size());
    for (uint32_t v : {hp.n_vocab, hp.n_ctx_train, hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.n_ff,
                       hp.head_dim, hp.head_dim_v, hp.n_rot, hp.n_ctx_orig, hp.n_swa})
        f.add_value(v);
    for (float v : {hp.norm_rms_eps, hp.rope_freq_base, hp.rope_freq_scale, hp.rope_attn_factor,
                    hp.rope_freq_base_swa, hp.rope_freq_scale_swa, hp.attention_scale, hp.attn_softcap})
        f.add_value(std::bit_cast<uint32_t>(v));
    f.add_value(static_cast<uint32_t>(hp.rope_order));
    for (bool b : hp.swa_layers) f.add_value(static_cast<uint8_t>(b));
    // Added only when set, so that the files of the earlier families keep their hash.
    if (std::find(hp.nope_layers.begin(), hp.nope_layers.end(), true) != hp.nope_layers.end())
        for (bool b : hp.nope_layers) f.add_value(static_cast<uint8_t>(b));
    if (hp.n_layer_nextn != 0) f.add_value(hp.n_layer_nextn);
    for (float v : {hp.embedding_scale, hp.residual_scale, hp.normed_input_residual})
        if (v != 0.0f) f.add_value(std::bit_cast<uint32_t>(v));
    for (bool b : {hp.has_qk_norm, hp.fused_qkv, hp.scale_embeddings, hp.has_post_norms})
        f.add_value(static_cast<uint8_t>(b));
    if (hp.n_expert > 0)  // (dense models keep the hash they had)
        for (uint32_t v : {hp.n_expert, hp.n_expert_used, hp.n_ff_exp}) f.add_value(v);
    return f.h;
}

struct Identity {
    uint32_t n_layer, n_embd_k, n_embd_v, type_k, type_v, n_vocab;
    uint64_t hash;
};

}  // namespace

size_t Context::save_sequence(SeqId seq, std::span<const TokenId> tokens, const std::string& path) {
    size_t n_saved = 0;
    const std::vector<uint8_t> bytes = sequence_state(seq, tokens, &n_saved);
    write_file_atomically(path, bytes);
    return n_saved;
}

std::vector<uint8_t> Context::sequence_state(SeqId seq, std::span<const TokenId> tokens, size_t* n_saved) {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("save_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    apply_pending_shifts();  // saved keys are rotated for the positions saved with them
    const model::HParams& hp = model_.hparams();
    memory::ByteWriter w;
    w.bytes(kMagic, sizeof kMagic);
    w.value(kVersion);
    for (uint32_t v : {hp.n_layer, hp.n_embd_k(), hp.n_embd_v(), static_cast<uint32_t>(params_.type_k),
                       static_cast<uint32_t>(params_.type_v), hp.n_vocab})
        w.value(v);
    w.value(hparams_hash(hp));
    w.value(static_cast<uint32_t>(tokens.size()));
    w.bytes(tokens.data(), tokens.size() * sizeof(TokenId));
    std::vector<memory::Section> sections;
    memory_->save_seq(seq, sections);
    memory::write_sections(w, sections);
    if (n_saved) *n_saved = sections.empty() ? 0 : sections.front().n_positions;
    Fnv1a sum;
    sum.add(w.buffer().data(), w.buffer().size());
    w.value(sum.h);
    return std::move(w.buffer());
}

std::vector<TokenId> Context::restore_sequence(SeqId seq, const std::string& path, uint32_t max_positions) {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    const auto n_sections = static_cast<uint32_t>(memory_->n_sections());
    const uint64_t max_payload = memory_->max_saved_bytes();

    // The most a file for this context can hold: a bigger one is refused unread.
    const uint64_t max_size =
        sizeof kMagic + 4 + 6 * 4 + 8 + 4 + uint64_t{params_.n_ctx} * 4 + 4 + 16 * n_sections + max_payload + 8;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("cannot read the sequence file: " + ec.message());
    if (size > max_size) throw Error("the sequence file is larger than this context's cache could hold");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open the sequence file");
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error("reading the sequence file failed");
    return load_sequence_state(seq, {reinterpret_cast<const uint8_t*>(data.data()), data.size()}, max_positions);
}

std::vector<TokenId> Context::load_sequence_state(SeqId seq, std::span<const uint8_t> data, uint32_t max_positions) {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    const model::HParams& hp = model_.hparams();
    const auto n_sections = static_cast<uint32_t>(memory_->n_sections());
    const uint64_t max_payload = memory_->max_saved_bytes();

    memory::ByteReader r(data.data(), data.size(), "the sequence file");
    char magic[8];
    r.bytes(magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Error("not a cria sequence file");
    const auto version = r.value<uint32_t>();
    if (version != kVersion)
        throw Error("the sequence file has version " + std::to_string(version) + "; this build reads version " +
                    std::to_string(kVersion));
    Identity id{};
    id.n_layer = r.value<uint32_t>();
    id.n_embd_k = r.value<uint32_t>();
    id.n_embd_v = r.value<uint32_t>();
    id.type_k = r.value<uint32_t>();
    id.type_v = r.value<uint32_t>();
    id.n_vocab = r.value<uint32_t>();
    id.hash = r.value<uint64_t>();
    if (id.n_layer != hp.n_layer || id.n_embd_k != hp.n_embd_k() || id.n_embd_v != hp.n_embd_v() ||
        id.n_vocab != hp.n_vocab || id.hash != hparams_hash(hp))
        throw Error("the sequence file was saved with another model (" + std::to_string(id.n_layer) + " layers, K/V widths " +
                    std::to_string(id.n_embd_k) + "/" + std::to_string(id.n_embd_v) + ", " + std::to_string(id.n_vocab) +
                    " tokens; this model: " + std::to_string(hp.n_layer) + ", " + std::to_string(hp.n_embd_k()) + "/" +
                    std::to_string(hp.n_embd_v()) + ", " + std::to_string(hp.n_vocab) + ")");
    if (id.type_k != static_cast<uint32_t>(params_.type_k) || id.type_v != static_cast<uint32_t>(params_.type_v))
        throw Error("the sequence file was saved with other cache types than this context's " +
                    std::string(element_type_name(params_.type_k)) + "/" + std::string(element_type_name(params_.type_v)));

    const uint32_t limit = max_positions > 0 ? std::min(max_positions, params_.n_ctx) : params_.n_ctx;
    const auto n_tokens = r.value<uint32_t>();
    if (n_tokens > limit)
        throw Error("the sequence file holds " + std::to_string(n_tokens) + " tokens, more than the " +
                    std::to_string(limit) + " positions a sequence may hold here");
    std::vector<TokenId> tokens(n_tokens);
    r.bytes(tokens.data(), tokens.size() * sizeof(TokenId));
    for (TokenId t : tokens)
        if (t < 0 || static_cast<uint32_t>(t) >= hp.n_vocab) throw Error("the sequence file holds an invalid token id");

    const std::vector<memory::Section> sections = memory::read_sections(r, n_sections, max_payload);
    Fnv1a sum;
    sum.add(data.data(), r.offset());
    if (r.value<uint64_t>() != sum.h) throw Error("the sequence file is corrupt (checksum mismatch)");
    if (r.left() != 0) throw Error("the sequence file has trailing bytes");
    // Every memory checks its section (layout, positions, room) before any changes.
    memory::LoadLimits limits;
    limits.max_positions = max_positions;
    auto loaded = memory_->read_seq(seq, sections, limits);
    memory_->load_seq(seq, *loaded);
    return tokens;
}

}  // namespace cria::runtime
