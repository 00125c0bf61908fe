#pragma once
// Muse Glimmer's tool calls (ATEM markup), the body of an assistant message
// addressed to a tool:
//
//   <atem:function_calls>
//   <atem:invoke name="get_weather">
//   <atem:parameter name="city">Paris</atem:parameter>
//   <atem:parameter name="days">3</atem:parameter>
//   </atem:invoke>
//   </atem:function_calls>
//
// Strings are written raw, every other value as JSON (the template's
// render_atem), so a value that reads as a JSON number, boolean, null, array
// or object is taken as that value and anything else as a string (the
// parser sees no tool schemas).

#include <optional>
#include <string>
#include <vector>

#include "cria/chat/output_parser.h"

namespace cria::chat {

// The calls of one message body, or nothing when the body is not a complete
// ATEM block (then it is no tool call and the caller keeps its text).
std::optional<std::vector<ToolCall>> parse_atem_calls(const std::string& body);

}  // namespace cria::chat
