#pragma once
// Renders a model's chat template (the Jinja source stored in GGUF metadata
// as tokenizer.chat_template) into the prompt text, exactly as Hugging Face
// transformers' apply_chat_template would.

#include <string>

#include <nlohmann/json.hpp>

#include "cria/chat/jinja.h"

namespace cria::chat {

struct ChatTemplateInputs {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role":..., "content":...}, ...]
    nlohmann::ordered_json tools;           // null: `tools` is left undefined in the template
    bool add_generation_prompt = false;
    std::string bos_token;
    std::string eos_token;
    // Further variables (enable_thinking, reasoning_effort, ...), an object or null.
    nlohmann::ordered_json extra_context;
    // strftime_now() renders this time (seconds since the epoch, UTC);
    // negative means the current time.
    long long now = -1;
};

// Throws jinja::TemplateError (a cria::Error) with the template's message
// when the template raises (raise_exception) or fails.
std::string render_chat_template(const std::string& template_source, const ChatTemplateInputs& inputs,
                                 const jinja::Limits& limits = {});

// The same with a template parsed once, for rendering many conversations.
std::string render_chat_template(const jinja::Template& tmpl, const ChatTemplateInputs& inputs);

}  // namespace cria::chat
