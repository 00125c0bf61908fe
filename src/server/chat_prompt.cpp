#include "chat_prompt.h"

#include "cria/chat/chat_template.h"
#include "cria/core/error.h"
#include "cria/grammar/json_schema.h"

namespace cria::server {

const char* const kDefaultChatTemplate = R"TMPL({%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\n' + (message.content or '') }}
{%- for tc in message.tool_calls or [] %}
{{- '\n<tool_call>\n{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) + '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
)TMPL";

namespace {

// The output convention a template teaches its model, judged by its markers
// (chat::detect_output_format), and, beyond it, a Llama 3 template that
// names ipython outside a header.
chat::OutputFormat detect_format(const std::string& src) {
    const chat::OutputFormat f = chat::detect_output_format(src);
    if (f == chat::OutputFormat::Generic && src.find("ipython") != std::string::npos) return chat::OutputFormat::Llama3;
    return f;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

ChatFormatter::ChatFormatter(const vocab::Vocab& vocab, std::string template_source) : vocab_(vocab) {
    if (template_source.empty()) {
        template_source = kDefaultChatTemplate;
        is_default_ = true;
    }
    source_ = std::move(template_source);
    template_ = std::make_unique<jinja::Template>(source_);
    format_ = detect_format(source_);
    if (vocab_.bos() != vocab::kNoToken) bos_text_ = vocab_.token(vocab_.bos()).text;
    if (vocab_.eos() != vocab::kNoToken) eos_text_ = vocab_.token(vocab_.eos()).text;
    for (size_t id = 0; id < vocab_.size(); ++id)
        if (vocab_.is_control(static_cast<vocab::TokenId>(id)) && !vocab_.token(static_cast<vocab::TokenId>(id)).text.empty())
            control_texts_.push_back(vocab_.token(static_cast<vocab::TokenId>(id)).text);
}

std::string ChatFormatter::render(const json& messages, const json& tools, bool add_generation_prompt,
                                  const json& extra_context) const {
    chat::ChatTemplateInputs in;
    in.messages = messages;
    in.tools = tools;
    in.add_generation_prompt = add_generation_prompt;
    in.bos_token = bos_text_;
    in.eos_token = eos_text_;
    in.extra_context = extra_context;
    std::string text;
    try {
        text = chat::render_chat_template(*template_, in);
    } catch (const std::exception& e) {
        throw ApiError(400, "invalid_request_error", std::string("the chat template failed: ") + e.what());
    }
    // Tokenizing adds the BOS token itself; keep it from appearing twice.
    if (!bos_text_.empty() && vocab_.add_bos() && text.compare(0, bos_text_.size(), bos_text_) == 0)
        text.erase(0, bos_text_.size());
    return text;
}

namespace {

// The message texts a template inserts: string contents and the text parts
// of array contents, in message order.
std::vector<std::string> content_texts(const json& messages) {
    std::vector<std::string> out;
    if (!messages.is_array()) return out;
    for (const auto& m : messages) {
        if (!m.is_object() || !m.contains("content")) continue;
        const json& c = m["content"];
        if (c.is_string()) {
            out.push_back(c.get<std::string>());
        } else if (c.is_array()) {
            for (const auto& part : c)
                if (part.is_object() && part.contains("text") && part["text"].is_string())
                    out.push_back(part["text"].get<std::string>());
        }
    }
    return out;
}

std::string_view trimmed(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace

std::vector<vocab::Vocab::Span> ChatFormatter::content_spans(const std::string& text, const json& messages,
                                                             bool split_at_marker) const {
    // Each content is the first occurrence at or after the previous one (the
    // template writes the messages in order), as given or trimmed.
    // An occurrence must not cut through a control token of the markup
    // (a content "sys" inside "<|system|>" is not the content).
    const auto cuts_a_control_token = [&](size_t boundary) {
        for (const std::string& c : control_texts_)
            for (size_t p = boundary >= c.size() ? boundary - c.size() + 1 : 0; p < boundary; ++p)
                if (text.compare(p, c.size(), c) == 0) return true;
        return false;
    };
    const auto find_from = [&](std::string_view needle, size_t from) {
        for (size_t at = text.find(needle, from); at != std::string::npos; at = text.find(needle, at + 1))
            if (!cuts_a_control_token(at) && !cuts_a_control_token(at + needle.size())) return at;
        return std::string::npos;
    };
    std::vector<vocab::Vocab::Span> spans;
    size_t cursor = 0;
    std::vector<std::string> contents = content_texts(messages);
    if (split_at_marker) {
        std::vector<std::string> pieces;
        const std::string_view marker = media::kDefaultMediaMarker;
        for (const std::string& c : contents)
            for (size_t start = 0;;) {
                const size_t at = c.find(marker, start);
                pieces.push_back(c.substr(start, at == std::string::npos ? std::string::npos : at - start));
                if (at == std::string::npos) break;
                start = at + marker.size();
            }
        contents = std::move(pieces);
    }
    for (const std::string& content : contents) {
        if (content.empty()) continue;
        size_t at = find_from(content, cursor), length = content.size();
        if (at == std::string::npos) {
            const std::string_view t = trimmed(content);
            at = t.empty() ? std::string::npos : find_from(t, cursor);
            length = t.size();
        }
        if (at == std::string::npos) {
            // Not found: harmless unless the content holds a control token's text.
            const auto ids = vocab_.tokenize(content, false, true);
            for (const vocab::TokenId id : ids)
                if (vocab_.is_control(id))
                    throw bad_request("a message contains the control token '" + vocab_.token(id).text +
                                      "' as text, and the chat template changes the message so it cannot be kept "
                                      "as text; remove it (or start the server with --parse-special-in-content)",
                                      "messages");
            continue;
        }
        spans.push_back({at, at + length});
        cursor = at + length;
    }
    return spans;
}

std::vector<vocab::TokenId> ChatFormatter::tokenize(const std::string& text, const json& messages) const {
    if (parse_special_in_content_) return vocab_.tokenize(text, true, true);
    const auto spans = content_spans(text, messages);
    return vocab_.tokenize(text, true, std::span<const vocab::Vocab::Span>(spans));
}

void ChatFormatter::tokenize_with_images(const std::string& text, ChatJob& job) const {
    const auto spans = parse_special_in_content_ ? std::vector<vocab::Vocab::Span>{} : content_spans(text, job.messages, true);
    const auto tokenize_part = [&](std::string_view part, size_t offset) {
        if (parse_special_in_content_) return vocab_.tokenize(part, false, true);
        // The content spans inside this part, in its own offsets.
        std::vector<vocab::Vocab::Span> local;
        for (const auto& sp : spans) {
            const size_t b = std::max(sp.begin, offset), e = std::min(sp.end, offset + part.size());
            if (b < e) local.push_back({b - offset, e - offset});
        }
        return vocab_.tokenize(part, false, std::span<const vocab::Vocab::Span>(local));
    };
    media::MediaPrompt mp;
    try {
        mp = media::tokenize_media_prompt(vocab_, text, job.images, delimiters_, media::kDefaultMediaMarker, true, false,
                                          tokenize_part);
    } catch (const Error& e) {
        throw bad_request(std::string(e.what()) + " (does the chat template show every image?)", "messages");
    }
    job.gen.prompt.clear();
    job.gen.images.clear();
    for (const auto& c : mp.chunks) {
        if (!c.is_image()) {
            job.gen.prompt.insert(job.gen.prompt.end(), c.tokens.begin(), c.tokens.end());
            continue;
        }
        job.gen.images.push_back({job.gen.prompt.size(), c.image});
        job.gen.prompt.insert(job.gen.prompt.end(), static_cast<size_t>(c.image->n_tokens),
                              image_placeholder(c.image->hash));
    }
}

chat::OutputParserOptions ChatFormatter::prepare(ChatJob& job) const {
    chat::OutputParserOptions parser;
    parser.format = format_;
    json tools = job.tool_choice == "none" ? json() : job.tools;
    if (!tools.is_null() && job.tool_choice != "auto" && job.tool_choice != "required") {
        json only = json::array();
        for (const auto& t : tools)
            if (t["function"]["name"] == job.tool_choice) only.push_back(t);
        if (only.empty()) throw bad_request("'tool_choice' names a function that is not in 'tools'", "tool_choice");
        tools = only;
    }
    const std::string text = render(job.messages, tools, true, job.template_kwargs);
    if (job.images.empty())
        job.gen.prompt = tokenize(text, job.messages);
    else
        tokenize_with_images(text, job);
    parser.reasoning_starts_open = ends_with(text, "<think>\n") || ends_with(text, "<think>") ||
                                   (format_ == chat::OutputFormat::KimiK3 && chat::prompt_opens_reasoning(text));

    try {
        if (!job.response_schema.is_null()) {
            json schema = job.response_schema;
            if (schema.empty()) schema = {{"type", "object"}};
            job.gen.grammar = grammar::json_schema_to_gbnf(nlohmann::json(schema));
        } else if (!tools.is_null()) {
            // A forced call is constrained from the first token; "auto" only
            // once the model opens a call (a lazy grammar), where the format
            // has an opening marker to wait for.
            const bool forced = job.tool_choice != "auto";
            const bool hermes = format_ == chat::OutputFormat::Hermes;
            if (forced || hermes) {
                auto g = grammar::tool_call_grammar(nlohmann::json(tools),
                                                    hermes ? grammar::ToolCallFormat::Hermes : grammar::ToolCallFormat::Json,
                                                    job.parallel_tool_calls);
                job.gen.grammar = g.gbnf;
                if (!forced) {
                    job.gen.grammar_options.lazy = true;
                    job.gen.grammar_options.triggers.words = g.trigger_words;
                }
                // Bare JSON calls are read as Llama 3's.
                if (!hermes && (parser.format == chat::OutputFormat::Generic)) parser.format = chat::OutputFormat::Llama3;
            }
        }
    } catch (const ApiError&) {
        throw;
    } catch (const std::exception& e) {
        throw bad_request(std::string("cannot build a grammar: ") + e.what(), "response_format");
    }
    if (is_default_) {
        // The ChatML markers may not be tokens of this vocabulary; stop on their text.
        job.gen.stop.push_back("<|im_end|>");
        job.gen.stop.push_back("<|im_start|>");
    }
    return parser;
}

}  // namespace cria::server
