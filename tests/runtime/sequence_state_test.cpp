// Context::save_sequence / restore_sequence on stories260K: a restored
// sequence continues exactly as if it had never left the cache, without any
// forward pass; foreign, truncated and corrupt files are refused and leave
// the cache as it was.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/model/model.h"
#include "cria/runtime/context.h"
#include "cria/vocab/vocab.h"
#include "support/test_paths.h"

namespace cria::runtime {
namespace {

ContextParams params(ElementType type = ElementType::F16) {
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_seq_max = 2;
    cp.n_threads = 2;
    cp.type_k = cp.type_v = type;
    return cp;
}

TokenId argmax(std::span<const float> logits) {
    return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Greedy tokens of `seq`, starting by decoding `next` at position `pos`.
std::vector<TokenId> continue_greedy(Context& ctx, SeqId seq, TokenId next, int32_t pos, int n) {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) {
        Batch b;
        b.add(next, pos++, {seq}, true);
        EXPECT_EQ(ctx.decode(b), 0);
        next = argmax(ctx.logits(-1));
        out.push_back(next);
    }
    return out;
}

// Decodes the prompt into `seq` and returns the first greedy token.
TokenId prefill(Context& ctx, SeqId seq, const std::vector<TokenId>& prompt) {
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), {seq}, i + 1 == prompt.size());
    EXPECT_EQ(ctx.decode(b), 0);
    return argmax(ctx.logits(-1));
}

std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& p, const std::string& data) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
}

class SequenceState : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = model::Model::load(test::model_path("stories260K/stories260K.gguf").string());
        vocab_ = std::make_unique<vocab::Vocab>(vocab::Vocab::from_gguf(model_->file()));
        prompt_ = vocab_->tokenize("Once upon a time, a little girl", true, false);
    }
    std::unique_ptr<model::Model> model_;
    std::unique_ptr<vocab::Vocab> vocab_;
    std::vector<TokenId> prompt_;
};

TEST_F(SequenceState, RestoredSequenceContinuesAsIfUninterrupted) {
    constexpr int kTotal = 24, kFirst = 8;
    Context whole(*model_, params());
    std::vector<TokenId> expected{prefill(whole, 0, prompt_)};
    const auto rest = continue_greedy(whole, 0, expected[0], static_cast<int32_t>(prompt_.size()), kTotal - 1);
    expected.insert(expected.end(), rest.begin(), rest.end());

    Context ctx(*model_, params());
    std::vector<TokenId> got{prefill(ctx, 0, prompt_)};
    const auto first = continue_greedy(ctx, 0, got[0], static_cast<int32_t>(prompt_.size()), kFirst - 1);
    got.insert(got.end(), first.begin(), first.end());
    // The cache holds the prompt and every generated token but the last (sampled, not decoded).
    std::vector<TokenId> cached = prompt_;
    cached.insert(cached.end(), got.begin(), got.end() - 1);
    const auto file = test::temp_dir() / "seq-roundtrip.bin";
    EXPECT_EQ(ctx.save_sequence(0, cached, file.string()), cached.size());
    ctx.memory_seq_rm(0, -1, -1);
    EXPECT_EQ(ctx.memory_seq_pos_max(0), -1);
    // Another text takes the freed cells, so nothing of the saved sequence is left in the cache.
    prefill(ctx, 0, vocab_->tokenize("The big dog ran to the park and played with a red ball all day long", true, false));

    const Timings before = ctx.timings();
    // Into the other sequence: the cells themselves move, nothing is recomputed.
    EXPECT_EQ(ctx.restore_sequence(1, file.string()), cached);
    EXPECT_EQ(ctx.timings().prompt_tokens + ctx.timings().eval_tokens, before.prompt_tokens + before.eval_tokens);
    EXPECT_EQ(ctx.memory_seq_pos_min(1), 0);
    EXPECT_EQ(ctx.memory_seq_pos_max(1), static_cast<int32_t>(cached.size()) - 1);

    const auto more = continue_greedy(ctx, 1, got.back(), static_cast<int32_t>(cached.size()), kTotal - kFirst);
    got.insert(got.end(), more.begin(), more.end());
    EXPECT_EQ(got, expected);
}

TEST_F(SequenceState, BadFilesAreRefusedAndChangeNothing) {
    Context ctx(*model_, params());
    prefill(ctx, 0, prompt_);
    const auto dir = test::temp_dir();
    const auto good = dir / "seq-good.bin";
    ctx.save_sequence(0, prompt_, good.string());
    const std::string bytes = read_bytes(good);
    const int32_t n = static_cast<int32_t>(prompt_.size());

    auto refused = [&](const std::filesystem::path& p, const std::string& why) {
        SCOPED_TRACE(why);
        try {
            ctx.restore_sequence(0, p.string());
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
        // Sequence 0 still holds the prompt.
        EXPECT_EQ(ctx.memory_seq_pos_max(0), n - 1);
        EXPECT_EQ(ctx.memory_seq_pos_min(0), 0);
    };
    const auto truncated = dir / "seq-truncated.bin";
    write_bytes(truncated, bytes.substr(0, bytes.size() / 2));
    refused(truncated, "truncated");
    std::string flipped = bytes;
    flipped[flipped.size() - 100] ^= 0x10;  // inside the V rows
    const auto corrupt = dir / "seq-corrupt.bin";
    write_bytes(corrupt, flipped);
    refused(corrupt, "checksum");
    const auto garbage = dir / "seq-garbage.bin";
    write_bytes(garbage, "definitely not a sequence file");
    refused(garbage, "not a cria sequence file");
    write_bytes(corrupt, bytes + "x");
    refused(corrupt, "trailing");
    std::string newer = bytes;
    newer[8] = 9;  // version
    write_bytes(corrupt, newer);
    refused(corrupt, "version");

    // Another model's file, and another cache type.
    auto other = model::Model::load(test::model_path("austen-1m/austen-1m-f32.gguf").string());
    Context foreign(*other, params());
    Batch b;
    b.add(1, 0, {0}, true);
    ASSERT_EQ(foreign.decode(b), 0);
    const auto foreign_file = dir / "seq-foreign.bin";
    foreign.save_sequence(0, std::vector<TokenId>{1}, foreign_file.string());
    refused(foreign_file, "another model");
    Context f32(*model_, params(ElementType::F32));
    prefill(f32, 0, prompt_);
    const auto f32_file = dir / "seq-f32.bin";
    f32.save_sequence(0, prompt_, f32_file.string());
    refused(f32_file, "cache types");

    EXPECT_THROW(ctx.restore_sequence(2, good.string()), Error);  // n_seq_max = 2
    EXPECT_THROW(ctx.save_sequence(-1, prompt_, good.string()), Error);
    // The good file still loads.
    EXPECT_EQ(ctx.restore_sequence(1, good.string()), prompt_);
}

// A hand-made file with a valid checksum: the sections themselves are checked.
TEST_F(SequenceState, ForeignSectionsAreRefusedEvenWithAValidChecksum) {
    Context ctx(*model_, params());
    prefill(ctx, 0, prompt_);
    const auto dir = test::temp_dir();
    const auto good = dir / "seq-sections.bin";
    ctx.save_sequence(0, prompt_, good.string());
    const std::string bytes = read_bytes(good);
    const int32_t n = static_cast<int32_t>(prompt_.size());
    // magic, version, model file (u32 name length, name, u64 fingerprint), u64 LoRA identity, identity (6 x u32 + u64),
    // n_tokens, tokens, n_media (0), n_sections, then the first section's tag, version, size and payload (n_layer,
    // k/v cell bytes, n_swa, n_chunk, n_cells, positions, rows).
    uint32_t name_size = 0;
    std::memcpy(&name_size, bytes.data() + 12, 4);
    ASSERT_EQ(bytes.substr(16, name_size), "stories260K.gguf");
    const size_t sections_at = 8 + 4 + 4 + name_size + 8 + 8 + 32 + 4 + 4 * prompt_.size() + 4;
    const size_t tag_at = sections_at + 4;
    ASSERT_EQ(bytes.substr(tag_at, 4), "KVAT");
    auto with_checksum = [](std::string b) {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i + 8 < b.size(); ++i) h = (h ^ static_cast<uint8_t>(b[i])) * 1099511628211ull;
        std::memcpy(b.data() + b.size() - 8, &h, 8);
        return b;
    };
    auto refused = [&](const std::string& data, const std::string& why) {
        SCOPED_TRACE(why);
        const auto p = dir / "seq-sections-bad.bin";
        write_bytes(p, with_checksum(data));
        try {
            ctx.restore_sequence(0, p.string());
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
        EXPECT_EQ(ctx.memory_seq_pos_max(0), n - 1);
        EXPECT_EQ(ctx.memory_seq_pos_min(0), 0);
    };
    std::string b = bytes;
    b.replace(tag_at, 4, "KVSW");  // a sliding-window section where the full cache's belongs
    refused(b, "expects KVAT");
    b = bytes;
    b[tag_at + 4] = 3;  // the section's version
    refused(b, "version");
    b = bytes;
    b[sections_at] = 2;  // two sections announced
    refused(b, "sections");
    b = bytes;
    b[tag_at + 16 + 20 + 3] = 0x7f;  // the cell count: more than the cache has
    refused(b, "more cells");
    b = bytes;
    b[tag_at + 16 + 24 + 4 + 3] = static_cast<char>(0x80);  // the second position: negative
    refused(b, "positions");
    EXPECT_EQ(with_checksum(bytes), bytes);  // the helper is the file's own checksum
}

}  // namespace
}  // namespace cria::runtime

namespace cria::runtime {
namespace {

TEST_F(SequenceState, SaveNeverFollowsAPlantedTemporaryFile) {
    // An attacker who can write into the slot directory plants symlinks where
    // a naive writer would put its temporary file: the save must neither
    // follow them nor leave anything but the saved file.
    Context ctx(*model_, params());
    const TokenId first = prefill(ctx, 0, prompt_);
    (void)first;
    const auto dir = test::temp_dir() / "planted";
    std::filesystem::create_directories(dir);
    const auto victim = dir / "victim.txt";
    write_bytes(victim, "precious");
    const auto file = dir / "slot.bin";
    std::filesystem::create_symlink(victim, dir / "slot.bin.tmp");
    EXPECT_EQ(ctx.save_sequence(0, prompt_, file.string()), prompt_.size());
    EXPECT_EQ(read_bytes(victim), "precious") << "the planted .tmp symlink was followed";
    EXPECT_FALSE(std::filesystem::is_symlink(file));
    Context other(*model_, params());
    EXPECT_EQ(other.restore_sequence(1, file.string()), prompt_);
    size_t entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
    EXPECT_EQ(entries, 3u) << "victim, the planted link and the saved file only";
}

// Images among the tokens: their runs (placeholders, not vocabulary ids)
// are saved with their positions and hashes and come back as they were; a
// caller that does not ask for them gets a refusal, not placeholders.
TEST_F(SequenceState, MediaRunsAreSavedAndRestored) {
    Context ctx(*model_, params());
    prefill(ctx, 0, prompt_);
    std::vector<TokenId> tokens = prompt_;
    for (size_t i = 2; i < 5; ++i) tokens[i] = -7;  // an "image" of three tokens
    const std::vector<SavedMedia> media{{2, 3, 2, 3, 0x1234567890abcdefull}};
    const auto file = test::temp_dir() / "seq-media.bin";
    EXPECT_EQ(ctx.save_sequence(0, tokens, file.string(), media), tokens.size());
    Context other(*model_, params());
    std::vector<SavedMedia> back;
    EXPECT_EQ(other.restore_sequence(1, file.string(), 0, &back), tokens);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].first, 2u);
    EXPECT_EQ(back[0].n_tokens, 3u);
    EXPECT_EQ(back[0].pos, 2);
    EXPECT_EQ(back[0].n_positions, 3u);
    EXPECT_EQ(back[0].hash, 0x1234567890abcdefull);
    EXPECT_EQ(other.memory_seq_pos_max(1), static_cast<int32_t>(tokens.size()) - 1);
    Context plain(*model_, params());
    EXPECT_THROW(plain.restore_sequence(0, file.string()), Error);
    EXPECT_EQ(plain.memory_seq_pos_max(0), -1);
    // Placeholders outside a declared run are invalid tokens; runs must lie in the tokens, in order.
    EXPECT_THROW(ctx.save_sequence(0, tokens, file.string(), std::vector<SavedMedia>{{3, 9, 3, 9, 1}}), Error);
    EXPECT_THROW(ctx.save_sequence(0, tokens, file.string(),
                                   std::vector<SavedMedia>{{2, 3, 2, 3, 1}, {3, 1, 3, 1, 2}}),
                 Error);
    const auto bad = test::temp_dir() / "seq-media-bad.bin";
    ctx.save_sequence(0, tokens, bad.string(), std::vector<SavedMedia>{{2, 2, 2, 2, 1}});  // token 4 is left out
    EXPECT_THROW(other.restore_sequence(1, bad.string(), 0, &back), Error);
    EXPECT_EQ(other.restore_sequence(1, file.string(), 0, &back), tokens);  // the good file still loads
}

}  // namespace
}  // namespace cria::runtime

namespace cria::runtime {
namespace {

// A copy of stories260K with one byte of `tensor`'s data changed at `at`
// (a fraction of its size): same hyperparameters, other weights.
std::filesystem::path altered_copy(const model::Model& m, const std::string& tensor, double at, const std::string& name) {
    std::string bytes = read_bytes(m.file().path());
    const gguf::TensorInfo* t = m.file().find_tensor(tensor);
    EXPECT_NE(t, nullptr);
    const size_t offset = m.file().data_offset() + t->offset + static_cast<size_t>(static_cast<double>(t->n_bytes - 1) * at);
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x01);
    const auto path = test::temp_dir() / name;
    write_bytes(path, bytes);
    return path;
}

// The header names the model file by its content: a model with the same
// hyperparameters but other weights (a fine-tune) is another model, while a
// renamed copy of the same file is the same one.
TEST_F(SequenceState, AModelWithOtherWeightsIsAnotherModel) {
    Context ctx(*model_, params());
    prefill(ctx, 0, prompt_);
    const auto dir = test::temp_dir();
    const auto saved = dir / "seq-weights.bin";
    ctx.save_sequence(0, prompt_, saved.string());
    ctx.memory_seq_rm(0, -1, -1);
    prefill(ctx, 0, std::vector<TokenId>(prompt_.begin(), prompt_.begin() + 3));

    for (double at : {0.0, 0.5, 1.0}) {
        SCOPED_TRACE(at);
        const auto tuned_path = altered_copy(*model_, "token_embd.weight", at, "stories-tuned.gguf");
        auto tuned = model::Model::load(tuned_path.string());
        Context other(*tuned, params());
        try {
            other.restore_sequence(0, saved.string());
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("another model (stories260K.gguf, fingerprint"), std::string::npos) << what;
            EXPECT_NE(what.find("stories-tuned.gguf"), std::string::npos) << what;
        }
        EXPECT_EQ(other.memory_seq_pos_max(0), -1);
        // And the other way round: its file does not load here, and the sequence keeps its 3 positions.
        Batch b;
        b.add(prompt_[0], 0, {0}, true);
        ASSERT_EQ(other.decode(b), 0);
        const auto foreign = dir / "seq-tuned.bin";
        other.save_sequence(0, std::vector<TokenId>{prompt_[0]}, foreign.string());
        EXPECT_THROW(ctx.restore_sequence(0, foreign.string()), Error);
        EXPECT_EQ(ctx.memory_seq_pos_max(0), 2);
    }

    // A renamed copy of the same bytes restores the file.
    const auto copy = dir / "stories-renamed.gguf";
    std::filesystem::copy_file(model_->file().path(), copy, std::filesystem::copy_options::overwrite_existing);
    auto same = model::Model::load(copy.string());
    Context renamed(*same, params());
    EXPECT_EQ(renamed.restore_sequence(0, saved.string()), prompt_);
}

}  // namespace
}  // namespace cria::runtime
