// Reading real GGUF files: the bundled stories260K model and tokenizer files,
// in every load mode, and the typed metadata getters.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "gguf/gguf_bytes.h"
#include "support/test_paths.h"

namespace cria::gguf {
namespace {

std::string stories() { return test::model_path("stories260K/stories260K.gguf").string(); }

TEST(GgufReader, Stories260KHeaderMetadataAndTensors) {
    auto f = File::open(stories());
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->data_offset() % 32, 0u);
    EXPECT_EQ(f->metadata().size(), 19u);
    EXPECT_EQ(f->tensors().size(), 48u);
    EXPECT_EQ(f->architecture(), "llama");
    EXPECT_EQ(f->arch_key("block_count"), "llama.block_count");
    EXPECT_EQ(f->get_u32(f->arch_key("embedding_length")), 64u);
    EXPECT_EQ(f->get_u32("llama.block_count", 0), 5u);
    EXPECT_NEAR(*f->get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f, 1e-9f);

    const Value* tokens = f->find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    ASSERT_NE(tokens->as_string_array(), nullptr);
    EXPECT_EQ(tokens->size(), 512u);
    EXPECT_EQ((*tokens->as_string_array())[1], "<s>");
    EXPECT_EQ(f->find("tokenizer.ggml.scores")->as_f32_array().size(), 512u);
    EXPECT_EQ(f->find("tokenizer.ggml.token_type")->as_i32_array()[0], 2);

    const TensorInfo* emb = f->find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->type, ElementType::F32);
    EXPECT_EQ(emb->n_dims, 2u);
    EXPECT_EQ(emb->ne[0], 64u);
    EXPECT_EQ(emb->ne[1], 512u);
    EXPECT_EQ(emb->n_elements(), 64u * 512u);
    EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
    EXPECT_EQ(f->find_tensor("no.such.tensor"), nullptr);

    // The bytes are the ones at data_offset + offset in the file.
    std::ifstream in(stories(), std::ios::binary);
    in.seekg(static_cast<std::streamoff>(f->data_offset() + emb->offset));
    std::vector<char> expect(emb->n_bytes);
    in.read(expect.data(), static_cast<std::streamsize>(expect.size()));
    const auto got = f->tensor_data(*emb);
    ASSERT_EQ(got.size(), expect.size());
    EXPECT_EQ(std::memcmp(got.data(), expect.data(), expect.size()), 0);
}

TEST(GgufReader, EveryLoadModeGivesTheSameBytes) {
    auto reference = File::open(stories(), LoadMode::Mmap);
    EXPECT_EQ(reference->load_mode(), LoadMode::Mmap);
    for (LoadMode mode : {LoadMode::Auto, LoadMode::None, LoadMode::Mlock, LoadMode::MmapMlock, LoadMode::Dio}) {
        SCOPED_TRACE(std::string(load_mode_name(mode)));
        uint64_t last_done = 0, calls = 0;
        auto f = File::open(stories(), mode, [&](uint64_t done, uint64_t total) {
            EXPECT_LE(done, total);
            EXPECT_GE(done, last_done);
            last_done = done;
            ++calls;
        });
        ASSERT_EQ(f->tensors().size(), reference->tensors().size());
        for (const TensorInfo& t : f->tensors()) {
            const auto a = f->tensor_data(t), b = reference->tensor_data(*reference->find_tensor(t.name));
            ASSERT_EQ(a.size(), b.size());
            ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << t.name;
        }
        // Reading modes report progress; mapping modes never read, so never report.
        const bool reads = mode == LoadMode::None || mode == LoadMode::Mlock || mode == LoadMode::Dio;
        EXPECT_EQ(calls > 0, reads);
        if (mode == LoadMode::Dio) {
            EXPECT_TRUE(f->load_mode() == LoadMode::Dio || f->load_mode() == LoadMode::None);
        }
        if (mode == LoadMode::Dio && f->load_mode() != LoadMode::Dio) {
            // The filesystem refused O_DIRECT: the fallback must say so.
            ASSERT_FALSE(f->warnings().empty());
            EXPECT_NE(f->warnings()[0].find("direct I/O"), std::string::npos);
        }
    }
}

TEST(GgufReader, DirectIoOnTmpfsWorksOrFallsBackWithAMessage) {
    // /dev/shm is tmpfs, which refused O_DIRECT before Linux 6.6; either way
    // the data must arrive, and a fallback must be explained.
    const std::string path = "/dev/shm/cria_gguf_dio_test.gguf";
    std::filesystem::copy_file(stories(), path, std::filesystem::copy_options::overwrite_existing);
    auto f = File::open(path, LoadMode::Dio);
    std::filesystem::remove(path);
    EXPECT_EQ(f->tensors().size(), 48u);
    if (f->load_mode() != LoadMode::Dio) {
        ASSERT_FALSE(f->warnings().empty());
        EXPECT_NE(f->warnings()[0].find("O_DIRECT"), std::string::npos) << f->warnings()[0];
    }
}

TEST(GgufReader, LargeMetadataIsReadInGrowingPiecesWithoutMmap) {
    // This tokenizer's metadata is several MB: more than the first 1 MB read.
    const std::string path = test::data_path("tokenizer/ggml-vocab-deepseek-llm.gguf").string();
    auto mapped = File::open(path, LoadMode::Mmap);
    auto read = File::open(path, LoadMode::None);
    EXPECT_GT(mapped->data_offset(), 1u << 20);
    EXPECT_EQ(read->metadata(), mapped->metadata());
    EXPECT_EQ(read->data_offset(), mapped->data_offset());
}

TEST(GgufReader, GettersConvertIntegersAndRejectWrongTypes) {
    test::GgufBytes b;
    b.header(0, 6)
        .kv_u32("k.u32", 7)
        .str("k.i8").u32(1).put<int8_t>(-3)
        .str("k.u64big").u32(10).u64(uint64_t{1} << 40)
        .kv_str("k.str", "text")
        .str("k.bool").u32(7).put<uint8_t>(1)
        .str("k.f64").u32(12).put<double>(0.5);
    auto f = File::parse(b.span(), "getters.gguf");
    EXPECT_EQ(f->get_u32("k.u32"), 7u);
    EXPECT_EQ(f->get_u64("k.u32"), 7u);
    EXPECT_EQ(f->get_i32("k.u32"), 7);
    EXPECT_EQ(f->get_i32("k.i8"), -3);
    EXPECT_EQ(f->get_f32("k.u32"), 7.0f);
    EXPECT_EQ(f->get_f32("k.f64"), 0.5f);
    EXPECT_EQ(f->get_u64("k.u64big"), uint64_t{1} << 40);
    EXPECT_EQ(f->get_bool("k.bool"), true);
    EXPECT_EQ(f->get_string("k.str"), "text");
    EXPECT_EQ(f->get_u32("missing", 9), 9u);
    EXPECT_FALSE(f->get_string("missing").has_value());
    EXPECT_EQ(f->get_string("missing", "fb"), "fb");
    try {
        (void)f->get_u32("k.u64big");  // does not fit in 32 bits
        FAIL() << "expected cria::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("k.u64big"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("u64"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)f->get_u32("k.i8"), Error);  // negative
    EXPECT_THROW((void)f->get_string("k.u32", ""), Error);
    EXPECT_THROW((void)f->get_bool("k.u32"), Error);
    EXPECT_THROW((void)f->get_f32("k.str"), Error);
    EXPECT_THROW((void)f->architecture(), Error);  // general.architecture missing
}

TEST(GgufReader, Version2AndCustomAlignment) {
    test::GgufBytes b;
    b.header(2, 1, 2).kv_u32("general.alignment", 64);
    b.tensor("a", {3}, 0, 0).tensor("b", {2, 2}, 0, 64).pad(64);
    b.put<float>(1).put<float>(2).put<float>(3).pad(64);
    b.put<float>(4).put<float>(5).put<float>(6).put<float>(7);
    auto f = File::parse(b.span(), "v2.gguf");
    EXPECT_EQ(f->version(), 2u);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->data_offset() % 64, 0u);
    const auto data = f->tensor_data(*f->find_tensor("b"));
    float v[4];
    std::memcpy(v, data.data(), sizeof v);
    EXPECT_EQ(v[0], 4.0f);
    EXPECT_EQ(v[3], 7.0f);
}

TEST(GgufReader, OpenReportsMissingAndNonRegularFiles) {
    try {
        File::open("/nonexistent/model.gguf");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
    }
    EXPECT_THROW(File::open("/tmp"), Error);
    // A tensor description that does not belong to the file is refused, not read out of bounds.
    auto f = File::open(stories());
    TensorInfo foreign;
    foreign.name = "foreign";
    foreign.offset = 0;
    foreign.n_bytes = f->file_size();
    EXPECT_THROW((void)f->tensor_data(foreign), Error);
}

TEST(GgufLoadMode, NamesRoundTrip) {
    for (LoadMode m : {LoadMode::Auto, LoadMode::None, LoadMode::Mmap, LoadMode::Mlock, LoadMode::MmapMlock,
                       LoadMode::Dio}) {
        EXPECT_EQ(parse_load_mode(load_mode_name(m)), m);
    }
    EXPECT_EQ(parse_load_mode("MMAP+MLOCK"), LoadMode::MmapMlock);
    EXPECT_FALSE(parse_load_mode("fast").has_value());
}

// Released pages of a mapping read back from the file; other load modes keep
// their buffer. Either way the bytes stay the same.
TEST(GgufReader, ReleasedPagesReadBackUnchanged) {
    for (LoadMode mode : {LoadMode::Mmap, LoadMode::None}) {
        SCOPED_TRACE(std::string(load_mode_name(mode)));
        auto f = File::open(stories(), mode);
        std::vector<std::vector<uint8_t>> before;
        for (const TensorInfo& t : f->tensors()) {
            const auto d = f->tensor_data(t);
            before.emplace_back(d.begin(), d.end());
        }
        for (const TensorInfo& t : f->tensors()) f->release_pages(f->tensor_data(t));
        // Bytes outside the data section are ignored, not an error.
        const std::vector<uint8_t> elsewhere(64);
        f->release_pages(elsewhere);
        for (size_t i = 0; i < f->tensors().size(); ++i) {
            const auto d = f->tensor_data(f->tensors()[i]);
            ASSERT_EQ(std::vector<uint8_t>(d.begin(), d.end()), before[i]) << f->tensors()[i].name;
        }
    }
}

}  // namespace
}  // namespace cria::gguf
