// libFuzzer target: the input is a chat template's source, rendered with a
// fixed conversation (tools and a tool-call round trip). Any input must either
// render or throw cria::Error; the limits keep every input fast and small.
//   seeds: tests/data/chat-templates/*.jinja

#include <cstddef>
#include <cstdint>
#include <string>

#include "cria/chat/chat_template.h"

namespace {

const char* const kConversation = R"([
 {"role": "system", "content": "You are a helpful assistant."},
 {"role": "user", "content": "What's the weather in Paris? \u00e9\u4e16"},
 {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
   "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
 {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 18}"},
 {"role": "assistant", "content": "<think>hm</think>It is 18 degrees."}
])";
const char* const kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto messages = nlohmann::ordered_json::parse(kConversation);
    static const auto tools = nlohmann::ordered_json::parse(kTools);
    cria::chat::ChatTemplateInputs in;
    in.messages = messages;
    in.tools = tools;
    in.add_generation_prompt = size % 2 == 0;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.now = 1768473000;
    cria::jinja::Limits limits;
    limits.max_steps = 200000;
    limits.max_output_bytes = 1 << 20;
    limits.max_collection_size = 1 << 16;
    limits.max_depth = 64;
    try {
        const std::string out = cria::chat::render_chat_template(std::string(reinterpret_cast<const char*>(data), size), in, limits);
        (void)out;
    } catch (const cria::Error&) {
    }
    return 0;
}
