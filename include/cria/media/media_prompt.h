#pragma once
// A prompt with images in it, as llama.cpp's mtmd_tokenize builds one: the
// text is cut at each media marker ("<__media__>" unless configured), every
// text part is tokenized with special tokens parsed, and each marker becomes
// the projector's begin text, the image's embeddings and its end text
// (gemma3 <start_of_image> .. <end_of_image>, qwen2vl <|vision_start|> ..
// <|vision_end|>, muse-glimmer <|image_start|> .. <|image_end|>, mlp none).
// BOS (and EOS) are added once, as the vocabulary asks, at the very ends.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cria/media/image_chunk.h"
#include "cria/vision/mmproj.h"
#include "cria/vocab/vocab.h"

namespace cria::media {

using vocab::TokenId;

inline constexpr std::string_view kDefaultMediaMarker = "<__media__>";

struct ImageDelimiters {
    std::string begin, end;
};
ImageDelimiters image_delimiters(vision::ProjectorType type);

// Text tokens, or one image (then `tokens` is empty).
struct PromptChunk {
    std::vector<TokenId> tokens;
    std::shared_ptr<const ImageChunk> image;
    bool is_image() const { return image != nullptr; }
};

struct MediaPrompt {
    std::vector<PromptChunk> chunks;
    // The text model rotates with M-RoPE: an image then takes max(nx, ny)
    // positions and its tokens get (t, h, w) sections (image_positions.h).
    bool mrope = false;

    // Tokens the model reads: text tokens plus image tokens (what usage counts).
    int64_t n_tokens() const;
    // Positions the prompt occupies (fewer than n_tokens under M-RoPE).
    int32_t n_positions() const;
    size_t n_images() const;
};

// Splits `text` at `marker`; the i-th marker takes images[i]. Throws
// cria::Error when the counts differ or the marker is empty.
MediaPrompt tokenize_media_prompt(const vocab::Vocab& vocab, std::string_view text,
                                  std::span<const std::shared_ptr<const ImageChunk>> images,
                                  const ImageDelimiters& delimiters, std::string_view marker, bool add_special,
                                  bool mrope);

// The same with the caller's tokenizer for the text parts (no BOS/EOS;
// `offset` is where the part starts in `text`), e.g. the server's, which
// keeps message contents literal. The delimiters are parsed for specials.
using TextPartTokenizer = std::function<std::vector<TokenId>(std::string_view part, size_t offset)>;
MediaPrompt tokenize_media_prompt(const vocab::Vocab& vocab, std::string_view text,
                                  std::span<const std::shared_ptr<const ImageChunk>> images,
                                  const ImageDelimiters& delimiters, std::string_view marker, bool add_special,
                                  bool mrope, const TextPartTokenizer& tokenize_part);

}  // namespace cria::media
