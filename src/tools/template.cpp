// cria template: render a chat template for a conversation, as a model would see it.
//
//   cria template --chat-template-file FILE --messages MESSAGES.json [--tools TOOLS.json]
//                 [--add-generation-prompt] [--bos-token S] [--eos-token S] [--context JSON]
//                 [--now YYYY-MM-DD[THH:MM]]
//
// Prints the rendered prompt exactly (no trailing newline is added). When the
// template raises or fails, prints Jinja2's error and exits non-zero.

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cria/chat/chat_template.h"
#include "cria/chat/template_now.h"
#include "cria/core/error.h"
#include "tools/command.h"

namespace {

struct TemplateOptions {
    std::string template_file;
    std::string messages_file;
    std::string tools_file;
    std::string context;
    std::string now;
    bool add_generation_prompt = false;
    std::string bos_token;
    std::string eos_token;
};

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cria::Error("cannot open '" + path + "' for reading");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

nlohmann::ordered_json read_json_file(const std::string& path) {
    try {
        return nlohmann::ordered_json::parse(read_text_file(path));
    } catch (const nlohmann::json::exception& e) {
        throw cria::Error("'" + path + "' is not valid JSON: " + e.what());
    }
}

std::function<int()> setup(CLI::App& cmd) {
    auto opt = std::make_shared<TemplateOptions>();
    cmd.add_option("--chat-template-file", opt->template_file, "Jinja chat template")->required();
    cmd.add_option("--messages", opt->messages_file, "JSON file: an array of messages, or an object with \"messages\"")->required();
    cmd.add_option("--tools", opt->tools_file, "JSON file with the tools array");
    cmd.add_flag("--add-generation-prompt", opt->add_generation_prompt, "End with the assistant's turn header");
    cmd.add_option("--bos-token", opt->bos_token, "Text of the BOS token");
    cmd.add_option("--eos-token", opt->eos_token, "Text of the EOS token");
    cmd.add_option("--context", opt->context, "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
    cmd.add_option("--now", opt->now,
                   "The moment strftime_now() renders, UTC: YYYY-MM-DD or YYYY-MM-DDTHH:MM (default: the current local time)");
    return [opt]() -> int {
        cria::chat::ChatTemplateInputs in;
        auto messages = read_json_file(opt->messages_file);
        if (messages.is_object() && messages.contains("messages")) {
            if (messages.contains("tools") && opt->tools_file.empty()) in.tools = messages["tools"];
            if (messages.contains("add_generation_prompt") && messages["add_generation_prompt"].is_boolean())
                in.add_generation_prompt = messages["add_generation_prompt"].get<bool>();
            messages = messages["messages"];
        }
        if (!messages.is_array()) throw cria::Error("the messages must be a JSON array");
        in.messages = messages;
        if (!opt->tools_file.empty()) in.tools = read_json_file(opt->tools_file);
        in.add_generation_prompt = in.add_generation_prompt || opt->add_generation_prompt;
        if (!opt->now.empty()) in.now = cria::chat::parse_template_now(opt->now);
        in.bos_token = opt->bos_token;
        in.eos_token = opt->eos_token;
        if (!opt->context.empty()) {
            try {
                in.extra_context = nlohmann::ordered_json::parse(opt->context);
            } catch (const nlohmann::json::exception& e) {
                throw cria::Error(std::string("--context is not valid JSON: ") + e.what());
            }
            if (!in.extra_context.is_object()) throw cria::Error("--context must be a JSON object");
        }
        const std::string out = cria::chat::render_chat_template(read_text_file(opt->template_file), in);
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
    };
}

}  // namespace

CRIA_REGISTER_COMMAND(template, "template", "Render a chat template for a conversation (as Hugging Face's Jinja2 does)", setup);
