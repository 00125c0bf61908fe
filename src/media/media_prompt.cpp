#include "cria/media/media_prompt.h"

#include "cria/core/error.h"
#include "cria/media/image_positions.h"

namespace cria::media {

ImageDelimiters image_delimiters(vision::ProjectorType type) {
    switch (type) {
        case vision::ProjectorType::Gemma3: return {"<start_of_image>", "<end_of_image>"};
        case vision::ProjectorType::Qwen2vlMerger: return {"<|vision_start|>", "<|vision_end|>"};
        case vision::ProjectorType::MuseGlimmer: return {"<|image_start|>", "<|image_end|>"};
        case vision::ProjectorType::Mlp: return {};
    }
    return {};
}

int64_t MediaPrompt::n_tokens() const {
    int64_t n = 0;
    for (const auto& c : chunks) n += c.is_image() ? c.image->n_tokens : static_cast<int64_t>(c.tokens.size());
    return n;
}

int32_t MediaPrompt::n_positions() const {
    int32_t n = 0;
    for (const auto& c : chunks)
        n += c.is_image() ? image_position_count(*c.image, mrope) : static_cast<int32_t>(c.tokens.size());
    return n;
}

size_t MediaPrompt::n_images() const {
    size_t n = 0;
    for (const auto& c : chunks) n += c.is_image();
    return n;
}

namespace {

// Appends to the last chunk when it is text (mtmd merges neighbouring text).
void add_text(MediaPrompt& p, const std::vector<TokenId>& tokens) {
    if (tokens.empty()) return;
    if (p.chunks.empty() || p.chunks.back().is_image()) p.chunks.emplace_back();
    auto& t = p.chunks.back().tokens;
    t.insert(t.end(), tokens.begin(), tokens.end());
}

}  // namespace

MediaPrompt tokenize_media_prompt(const vocab::Vocab& vocab, std::string_view text,
                                  std::span<const std::shared_ptr<const ImageChunk>> images,
                                  const ImageDelimiters& delimiters, std::string_view marker, bool add_special,
                                  bool mrope) {
    return tokenize_media_prompt(vocab, text, images, delimiters, marker, add_special, mrope,
                                 [&](std::string_view part, size_t) { return vocab.tokenize(part, false, true); });
}

MediaPrompt tokenize_media_prompt(const vocab::Vocab& vocab, std::string_view text,
                                  std::span<const std::shared_ptr<const ImageChunk>> images,
                                  const ImageDelimiters& delimiters, std::string_view marker, bool add_special,
                                  bool mrope, const TextPartTokenizer& tokenize_part) {
    if (marker.empty()) throw Error("the media marker must not be empty");
    MediaPrompt p;
    p.mrope = mrope;
    size_t next_image = 0, start = 0, n_markers = 0;
    while (true) {
        const size_t at = text.find(marker, start);
        const std::string_view part =
            text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start);
        if (!part.empty()) add_text(p, tokenize_part(part, start));
        if (at == std::string_view::npos) break;
        ++n_markers;
        if (next_image < images.size()) {
            if (!delimiters.begin.empty()) add_text(p, vocab.tokenize(delimiters.begin, false, true));
            p.chunks.push_back({{}, images[next_image]});
            if (!delimiters.end.empty()) add_text(p, vocab.tokenize(delimiters.end, false, true));
        }
        ++next_image;
        start = at + marker.size();
    }
    if (n_markers != images.size())
        throw Error("the prompt has " + std::to_string(n_markers) + " media markers (\"" + std::string(marker) +
                    "\") for " + std::to_string(images.size()) + " images");
    for (const auto& image : images)
        if (!image || image->n_tokens <= 0 || image->nx <= 0) throw Error("an image gave no tokens");
    if (add_special && vocab.add_bos()) {
        if (!p.chunks.empty() && !p.chunks.front().is_image())
            p.chunks.front().tokens.insert(p.chunks.front().tokens.begin(), vocab.bos());
        else
            p.chunks.insert(p.chunks.begin(), PromptChunk{{vocab.bos()}, nullptr});
    }
    if (add_special && vocab.add_eos()) add_text(p, {vocab.eos()});
    return p;
}

}  // namespace cria::media
