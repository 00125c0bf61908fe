// Context::save_sequence / restore_sequence: one sequence's state in a file.
//
// Layout (little-endian, as the host writes it):
//   "CRIASEQ" '\0'  u32 version (5)
//   model file: u32 name length, name (the file's name, for messages),
//     u64 content fingerprint (gguf/fingerprint.h: the weights it was saved with),
//     u64 LoRA identity (model::LoraSet::identity: the adapters and scales; 0: none)
//   model: u32 n_layer, n_embd_k, n_embd_v, type_k, type_v, n_vocab; u64 hparams hash
//   u32 n_tokens, i32 tokens[n_tokens]
//   u32 n_media, per media (SavedMedia): u32 first, u32 n_tokens, i32 pos,
//     u32 n_positions, u64 hash -- runs of tokens that stand for images
//   u32 n_sections, then per section (one per memory, memory/state_section.h):
//     u32 tag, u32 version, u64 size, payload (the memory's own format:
//     for a KV cache the positions and K/V rows of its cells)
//   u64 FNV-1a checksum of every byte before it
// Version 1 had a fixed list of one or two KV caches instead of sections;
// Version 2 had no model file name, fingerprint or LoRA identity (a model
// with the same hyperparameters but other weights was accepted) and no media
// list; version 3 (images) no model file name, fingerprint or LoRA identity;
// version 4 (fingerprint and LoRA) no media list. All are still read: what a
// version lacks is read as empty (no media, no adapters), and a file without a
// fingerprint is checked by the hyperparameters only, as before.
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
#include "cria/gguf/fingerprint.h"
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
constexpr uint32_t kVersion = 5;
constexpr uint32_t kMaxModelNameBytes = 4096;
// Version 3 added the media list, version 4 (on another line) the model file
// name, fingerprint and LoRA identity; version 5 has both.
bool version_has_media(uint32_t v) { return v == 3 || v >= 5; }
bool version_has_fingerprint(uint32_t v) { return v >= 4; }

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

// A name read from a file, safe to put in a message.
std::string printable(const std::string& s) {
    std::string out;
    for (char c : s) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
    return out;
}

struct Identity {
    uint32_t n_layer, n_embd_k, n_embd_v, type_k, type_v, n_vocab;
    uint64_t hash;
};

}  // namespace

// The media runs must lie in order inside the tokens, none empty or overlapping.
void check_media(std::span<const SavedMedia> media, size_t n_tokens, const char* what) {
    uint64_t end = 0;
    for (const SavedMedia& m : media) {
        if (m.n_tokens == 0 || m.first < end || uint64_t{m.first} + m.n_tokens > n_tokens || m.pos < 0)
            throw Error(std::string(what) + ": the media runs are not inside the tokens, in order");
        end = uint64_t{m.first} + m.n_tokens;
    }
}

// A pipeline root's state in RAM: this header, the id under which every
// other stage keeps its part, then the root's own part (a whole state image).
constexpr char kStagedMagic[8] = {'C', 'R', 'I', 'A', 'P', 'I', 'P', 'E'};

std::vector<uint8_t> Context::sequence_state(SeqId seq, std::span<const TokenId> tokens,
                                             std::span<const SavedMedia> media, size_t* n_positions) {
    if (stage_ == nullptr || !stage_->is_root()) return encode_sequence_state(seq, tokens, media, n_positions);
    check_media(media, tokens.size(), "sequence_state");
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("sequence_state: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    // The other stages' layers stay where they are: each keeps its part.
    const uint64_t id = stage_->keep_sequence_state(seq);
    std::vector<uint8_t> own;
    try {
        own = encode_sequence_state(seq, tokens, media, n_positions);
    } catch (...) {
        stage_->drop_kept_state(id);
        throw;
    }
    std::vector<uint8_t> bytes(sizeof kStagedMagic + sizeof id);
    std::memcpy(bytes.data(), kStagedMagic, sizeof kStagedMagic);
    std::memcpy(bytes.data() + sizeof kStagedMagic, &id, sizeof id);
    bytes.insert(bytes.end(), own.begin(), own.end());
    return bytes;
}

namespace {

// The id of a pipeline root's state image, and where its own part starts; throws for other bytes.
uint64_t staged_id(std::span<const uint8_t> bytes) {
    uint64_t id = 0;
    if (bytes.size() < sizeof kStagedMagic + sizeof id || std::memcmp(bytes.data(), kStagedMagic, sizeof kStagedMagic) != 0)
        throw Error("the sequence state was not saved by this pipeline (its other stages' parts are missing)");
    std::memcpy(&id, bytes.data() + sizeof kStagedMagic, sizeof id);
    return id;
}

}  // namespace

void Context::drop_sequence_state(std::span<const uint8_t> bytes) {
    if (stage_ == nullptr || !stage_->is_root()) return;
    uint64_t id = 0;
    try {
        id = staged_id(bytes);
    } catch (const Error&) {
        return;  // not one of this pipeline's: nothing is kept for it elsewhere
    }
    stage_->drop_kept_state(id);
}

std::vector<uint8_t> Context::encode_sequence_state(SeqId seq, std::span<const TokenId> tokens,
                                                    std::span<const SavedMedia> media, size_t* n_positions) {
    check_media(media, tokens.size(), "save_sequence");
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("save_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    apply_pending_shifts();  // saved keys are rotated for the positions saved with them
    const model::HParams& hp = model_.hparams();
    memory::ByteWriter w;
    w.bytes(kMagic, sizeof kMagic);
    w.value(kVersion);
    std::string model_name = gguf::file_base_name(model_.file());
    if (model_name.size() > kMaxModelNameBytes) model_name.resize(kMaxModelNameBytes);
    w.value(static_cast<uint32_t>(model_name.size()));
    w.bytes(model_name.data(), model_name.size());
    w.value(model_fingerprint());
    w.value(lora_for(seq).identity());
    for (uint32_t v : {hp.n_layer, hp.n_embd_k(), hp.n_embd_v(), static_cast<uint32_t>(params_.type_k),
                       static_cast<uint32_t>(params_.type_v), hp.n_vocab})
        w.value(v);
    w.value(hparams_hash(hp));
    w.value(static_cast<uint32_t>(tokens.size()));
    w.bytes(tokens.data(), tokens.size() * sizeof(TokenId));
    w.value(static_cast<uint32_t>(media.size()));
    for (const SavedMedia& m : media) {
        w.value(m.first);
        w.value(m.n_tokens);
        w.value(m.pos);
        w.value(m.n_positions);
        w.value(m.hash);
    }
    std::vector<memory::Section> sections;
    memory_->save_seq(seq, sections);
    w.reserve_more(memory::sections_bytes(sections) + sizeof(uint64_t));  // the sections and the checksum
    memory::write_sections(w, sections);
    if (n_positions) *n_positions = sections.empty() ? 0 : sections.front().n_positions;
    Fnv1a sum;
    sum.add(w.buffer().data(), w.buffer().size());
    w.value(sum.h);
    return std::move(w.buffer());
}

size_t Context::save_sequence(SeqId seq, std::span<const TokenId> tokens, const std::string& path,
                              std::span<const SavedMedia> media) {
    check_media(media, tokens.size(), "save_sequence");
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("save_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    // A pipeline's other stages hold the other layers: each writes its own file beside this one.
    if (stage_ != nullptr && stage_->is_root()) stage_->save_sequence(seq, path);
    size_t n_saved = 0;
    const std::vector<uint8_t> bytes = encode_sequence_state(seq, tokens, media, &n_saved);
    write_file_atomically(path, bytes);
    return n_saved;
}

std::vector<TokenId> Context::restore_sequence(SeqId seq, const std::string& path, uint32_t max_positions,
                                               std::vector<SavedMedia>* media_out) {
    if (stage_ == nullptr || !stage_->is_root()) return restore_own_sequence(seq, path, max_positions, media_out);
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    // Every stage restores its own part from its own file, all or nothing
    // each; when one refuses, the others may have loaded theirs, so the
    // sequence is emptied on every stage (the removal reaches them through
    // the memory's observer) rather than left in parts of two states.
    try {
        stage_->restore_sequence(seq, path, max_positions);
        return restore_own_sequence(seq, path, max_positions, media_out);
    } catch (...) {
        memory_->seq_rm(seq, -1, -1);
        throw;
    }
}

uint64_t Context::model_fingerprint() {
    if (!fingerprint_known_) {
        model_fingerprint_ = gguf::content_fingerprint(model_.file());
        fingerprint_known_ = true;
    }
    return model_fingerprint_;
}

uint64_t Context::max_sequence_state_bytes() const {
    const auto n_sections = static_cast<uint32_t>(memory_->n_sections());
    return sizeof kMagic + 4 + 4 + kMaxModelNameBytes + 8 + 8 + 6 * 4 + 8 + 4 + uint64_t{params_.n_ctx} * 4 + 4 +
           uint64_t{params_.n_ctx} * 24 + 4 + 16 * n_sections + memory_->max_saved_bytes() + 8;
}

std::vector<TokenId> Context::restore_own_sequence(SeqId seq, const std::string& path, uint32_t max_positions,
                                                   std::vector<SavedMedia>* media_out) {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    // The most a file for this context can hold: a bigger one is refused unread.
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("cannot read the sequence file: " + ec.message());
    if (size > max_sequence_state_bytes()) throw Error("the sequence file is larger than this context's cache could hold");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open the sequence file");
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error("reading the sequence file failed");
    return decode_sequence_state(seq, {reinterpret_cast<const uint8_t*>(data.data()), data.size()}, max_positions,
                                 media_out);
}

std::vector<TokenId> Context::load_sequence_state(SeqId seq, std::span<const uint8_t> data, uint32_t max_positions,
                                                  std::vector<SavedMedia>* media_out) {
    if (stage_ == nullptr || !stage_->is_root()) return decode_sequence_state(seq, data, max_positions, media_out);
    const uint64_t id = staged_id(data);
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    // As restore_sequence: a stage that refuses leaves the sequence empty on every stage.
    try {
        stage_->load_kept_state(seq, id, max_positions);
        return decode_sequence_state(seq, data.subspan(sizeof kStagedMagic + sizeof id), max_positions, media_out);
    } catch (...) {
        memory_->seq_rm(seq, -1, -1);
        throw;
    }
}

std::vector<TokenId> Context::decode_sequence_state(SeqId seq, std::span<const uint8_t> data, uint32_t max_positions,
                                                    std::vector<SavedMedia>* media_out) {
    if (seq < 0 || static_cast<uint32_t>(seq) >= params_.n_seq_max)
        throw Error("restore_sequence: sequence " + std::to_string(seq) + " is outside 0.." +
                    std::to_string(params_.n_seq_max - 1));
    const model::HParams& hp = model_.hparams();
    const auto n_sections = static_cast<uint32_t>(memory_->n_sections());
    const uint64_t max_payload = memory_->max_saved_bytes();
    if (data.size() > max_sequence_state_bytes())
        throw Error("the sequence file is larger than this context's cache could hold");

    memory::ByteReader r(data.data(), data.size(), "the sequence file");
    char magic[8];
    r.bytes(magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Error("not a cria sequence file");
    const auto version = r.value<uint32_t>();
    if (version < 2 || version > kVersion)
        throw Error("the sequence file has version " + std::to_string(version) + "; this build reads versions 2 to " +
                    std::to_string(kVersion));
    if (!version_has_fingerprint(version)) {
        // Saved before adapters existed: only a context without them may load it.
        if (lora_for(seq).identity() != 0)
            throw Error("the sequence file was saved with other LoRA adapters or scales than this context applies");
    } else {
    const auto name_size = r.value<uint32_t>();
    if (name_size > kMaxModelNameBytes) throw Error("the sequence file's model name is too long (corrupt file)");
    std::string saved_name(name_size, '\0');
    r.bytes(saved_name.data(), saved_name.size());
    const auto saved_fingerprint = r.value<uint64_t>();
    const uint64_t fingerprint = model_fingerprint();
    if (saved_fingerprint != fingerprint) {
        char ids[64];
        std::snprintf(ids, sizeof ids, "%016llx; this model: %016llx", static_cast<unsigned long long>(saved_fingerprint),
                      static_cast<unsigned long long>(fingerprint));
        throw Error("the sequence file was saved with another model (" + printable(saved_name) + ", fingerprint " +
                    ids + ", " + gguf::file_base_name(model_.file()) + ")");
    }
    if (r.value<uint64_t>() != lora_for(seq).identity())
        throw Error("the sequence file was saved with other LoRA adapters or scales than this context applies");
    }
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
    std::vector<SavedMedia> media;
    if (version_has_media(version)) {
        const auto n_media = r.value<uint32_t>();
        if (n_media > n_tokens) throw Error("the sequence file lists more media than tokens");
        media.resize(n_media);
        for (SavedMedia& m : media) {
            m.first = r.value<uint32_t>();
            m.n_tokens = r.value<uint32_t>();
            m.pos = r.value<int32_t>();
            m.n_positions = r.value<uint32_t>();
            m.hash = r.value<uint64_t>();
        }
        check_media(media, tokens.size(), "the sequence file");
    }
    if (!media.empty() && media_out == nullptr)
        throw Error("the sequence file holds images; it can be restored only where images are understood");
    // Vocabulary ids everywhere but inside the media runs (the caller's placeholders).
    size_t next = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (next < media.size() && i >= media[next].first) {
            if (i + 1 == size_t{media[next].first} + media[next].n_tokens) ++next;
            continue;
        }
        if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= hp.n_vocab)
            throw Error("the sequence file holds an invalid token id");
    }

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
    if (media_out != nullptr) *media_out = std::move(media);
    return tokens;
}

}  // namespace cria::runtime
