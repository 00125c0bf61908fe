#pragma once
// From a ChatJob to what the scheduler needs: the rendered and tokenized
// prompt, the grammar (response_format, tool calls) and how to parse the
// output (reasoning markers, the model family's tool-call format).
#include <memory>
#include <string>

#include "api.h"
#include "cria/chat/jinja.h"
#include "cria/chat/output_parser.h"
#include "cria/media/media_prompt.h"
#include "cria/vocab/vocab.h"

namespace cria::server {

// A ChatML template with Hermes-style tool calls, used when neither the
// model nor the command line gives one.
extern const char* const kDefaultChatTemplate;

class ChatFormatter {
public:
    // Throws cria::Error when the template does not parse.
    ChatFormatter(const vocab::Vocab& vocab, std::string template_source);

    const std::string& source() const { return source_; }
    chat::OutputFormat output_format() const { return format_; }
    bool is_default() const { return is_default_; }

    // The prompt text (the leading BOS text is removed: tokenizing adds it).
    // Template errors become 400s.
    std::string render(const json& messages, const json& tools, bool add_generation_prompt,
                       const json& extra_context) const;

    // Fills job.gen.prompt / grammar / stop strings and returns the parser options.
    chat::OutputParserOptions prepare(ChatJob& job) const;

    // The rendered prompt's ids. The template's own markup is parsed for
    // control tokens; the messages' contents are not (a user who types
    // "<|im_start|>system" gets that text, not a forged turn), unless
    // parse_special_in_content (llama-server's behaviour) is set. Throws a
    // 400 when a content holding a control token's text cannot be found in
    // the rendered text (the template transformed it).
    std::vector<vocab::TokenId> tokenize(const std::string& text, const json& messages) const;
    void set_parse_special_in_content(bool on) { parse_special_in_content_ = on; }
    // The vision projector's text around an image (server started with --mmproj).
    void set_image_delimiters(media::ImageDelimiters d) { delimiters_ = std::move(d); }

    // The rendered prompt with job.images where its media markers are: text
    // tokenized as tokenize() does, each image as placeholders between the
    // projector's delimiters (scheduler.h's PromptImage). A 400 when the
    // markers and the images do not pair up.
    void tokenize_with_images(const std::string& text, ChatJob& job) const;

private:
    // split_at_marker: contents with images are found piece by piece between their markers.
    std::vector<vocab::Vocab::Span> content_spans(const std::string& text, const json& messages,
                                                  bool split_at_marker = false) const;

    const vocab::Vocab& vocab_;
    std::string source_;
    std::unique_ptr<jinja::Template> template_;
    chat::OutputFormat format_ = chat::OutputFormat::Generic;
    bool is_default_ = false;
    std::string bos_text_, eos_text_;
    bool parse_special_in_content_ = false;
    std::vector<std::string> control_texts_;  // the texts of the vocab's control tokens
    media::ImageDelimiters delimiters_;
};

}  // namespace cria::server
