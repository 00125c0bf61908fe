// Splitting a prompt at media markers, the projectors' delimiters, and the
// positions images take (mtmd's layout).
#include <gtest/gtest.h>

#include "cria/core/error.h"
#include "cria/gguf/file.h"
#include "cria/media/image_positions.h"
#include "cria/media/media_prompt.h"
#include "cria/model/synthetic_model.h"
#include "support/test_paths.h"

namespace {

using namespace cria;
using media::ImageChunk;
using media::TokenId;

const vocab::Vocab& test_vocab() {
    static const vocab::Vocab v = [] {
        const std::string path = (test::temp_dir() / "media-prompt-vocab.gguf").string();
        model::write_synthetic_model(model::SyntheticModelSpec::tiny("llama"), path);
        return vocab::Vocab::from_gguf(*gguf::File::open(path));
    }();
    return v;
}

std::shared_ptr<const ImageChunk> image(int64_t nx, int64_t ny, uint64_t hash = 7) {
    auto c = std::make_shared<ImageChunk>();
    c->nx = nx;
    c->ny = ny;
    c->n_tokens = nx * ny;
    c->n_embd = 4;
    c->embd.assign(static_cast<size_t>(c->n_tokens * 4), 0.5f);
    c->hash = hash;
    return c;
}

std::vector<TokenId> cat(std::initializer_list<std::vector<TokenId>> parts) {
    std::vector<TokenId> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

TEST(MediaPrompt, EachProjectorHasLlamaCppsDelimiters) {
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::Gemma3).begin, "<start_of_image>");
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::Gemma3).end, "<end_of_image>");
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::Qwen2vlMerger).begin, "<|vision_start|>");
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::Qwen2vlMerger).end, "<|vision_end|>");
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::MuseGlimmer).begin, "<|image_start|>");
    EXPECT_EQ(media::image_delimiters(vision::ProjectorType::MuseGlimmer).end, "<|image_end|>");
    EXPECT_TRUE(media::image_delimiters(vision::ProjectorType::Mlp).begin.empty());
    EXPECT_TRUE(media::image_delimiters(vision::ProjectorType::Mlp).end.empty());
    EXPECT_TRUE(media::projector_non_causal(vision::ProjectorType::Gemma3));
    EXPECT_FALSE(media::projector_non_causal(vision::ProjectorType::Qwen2vlMerger));
}

TEST(MediaPrompt, TheMarkerBecomesDelimitersAroundTheImage) {
    const auto& v = test_vocab();
    const media::ImageDelimiters d{"<b>", "<e>"};
    const auto img = image(3, 1);
    const std::vector<std::shared_ptr<const ImageChunk>> images{img};
    const auto p = media::tokenize_media_prompt(v, "look <__media__> here", images, d, media::kDefaultMediaMarker, true, false);
    ASSERT_EQ(p.chunks.size(), 3u);
    ASSERT_TRUE(v.add_bos());
    EXPECT_EQ(p.chunks[0].tokens, cat({{v.bos()}, v.tokenize("look ", false, true), v.tokenize("<b>", false, true)}));
    ASSERT_TRUE(p.chunks[1].is_image());
    EXPECT_EQ(p.chunks[1].image, img);
    EXPECT_EQ(p.chunks[2].tokens, cat({v.tokenize("<e>", false, true), v.tokenize(" here", false, true)}));
    EXPECT_EQ(p.n_images(), 1u);
    EXPECT_EQ(p.n_tokens(), static_cast<int64_t>(p.chunks[0].tokens.size() + 3 + p.chunks[2].tokens.size()));
    EXPECT_EQ(p.n_positions(), p.n_tokens());
}

TEST(MediaPrompt, AnImageFirstGetsBosBeforeItAndImagesFollowInOrder) {
    const auto& v = test_vocab();
    const auto a = image(2, 1, 1), b = image(1, 1, 2);
    const std::vector<std::shared_ptr<const ImageChunk>> images{a, b};
    const auto p = media::tokenize_media_prompt(v, "[img][img]x", images, {}, "[img]", true, false);
    ASSERT_EQ(p.chunks.size(), 4u);
    EXPECT_EQ(p.chunks[0].tokens, std::vector<TokenId>{v.bos()});
    EXPECT_EQ(p.chunks[1].image, a);
    EXPECT_EQ(p.chunks[2].image, b);  // no delimiters: the images are neighbours
    EXPECT_EQ(p.chunks[3].tokens, v.tokenize("x", false, true));
}

TEST(MediaPrompt, MarkersAndImagesMustPairUp) {
    const auto& v = test_vocab();
    const std::vector<std::shared_ptr<const ImageChunk>> one{image(1, 1)};
    EXPECT_THROW(media::tokenize_media_prompt(v, "no marker", one, {}, media::kDefaultMediaMarker, true, false), Error);
    EXPECT_THROW(media::tokenize_media_prompt(v, "<__media__><__media__>", one, {}, media::kDefaultMediaMarker, true, false),
                 Error);
    EXPECT_THROW(media::tokenize_media_prompt(v, "<__media__>", one, {}, "", true, false), Error);
    EXPECT_NO_THROW(media::tokenize_media_prompt(v, "a<__media__>", one, {}, media::kDefaultMediaMarker, true, false));
}

TEST(MediaPrompt, MRopeImagesTakeTheLongerSideInPositions) {
    const auto& v = test_vocab();
    const std::vector<std::shared_ptr<const ImageChunk>> images{image(4, 3)};
    const auto p = media::tokenize_media_prompt(v, "a<__media__>b", images, {}, media::kDefaultMediaMarker, false, true);
    const auto n_text = static_cast<int32_t>(v.tokenize("a", false, true).size() + v.tokenize("b", false, true).size());
    EXPECT_EQ(p.n_tokens(), n_text + 12);
    EXPECT_EQ(p.n_positions(), n_text + 4);
    EXPECT_EQ(media::image_position_count(*images[0], false), 12);
    EXPECT_EQ(media::image_position_count(*images[0], true), 4);
    EXPECT_EQ(media::image_position_count(*image(2, 5), true), 5);
}

TEST(MediaPrompt, MRopeSectionsAreRowAndColumnFromTheFirstPosition) {
    // llama.cpp: t = p0, h = p0 + row, w = p0 + col, extra = 0 (absolute).
    EXPECT_EQ(media::mrope_image_position(10, 0, 3), (std::array<int32_t, 4>{10, 10, 10, 0}));
    EXPECT_EQ(media::mrope_image_position(10, 5, 3), (std::array<int32_t, 4>{10, 11, 12, 0}));
    EXPECT_EQ(media::mrope_image_position(7, 11, 4), (std::array<int32_t, 4>{7, 9, 10, 0}));
}

TEST(MediaPrompt, TheImageHashTellsImagesApart) {
    vision::RgbImage a{2, 1, {1, 2, 3, 4, 5, 6}};
    vision::RgbImage b = a;
    EXPECT_EQ(media::image_hash(a), media::image_hash(b));
    b.pixels[5] = 7;
    EXPECT_NE(media::image_hash(a), media::image_hash(b));
    vision::RgbImage c{1, 2, a.pixels};  // same bytes, other shape
    EXPECT_NE(media::image_hash(a), media::image_hash(c));
}

}  // namespace
