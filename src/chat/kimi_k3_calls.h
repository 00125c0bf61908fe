#pragma once
// Kimi-K3's tool calls ("XTML" markup), the body of the <|open|>tools<|sep|>
// block the template's render_assistant writes after the response:
//
//   <|open|>call tool="get_weather" index="1"<|sep|>
//     <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
//     <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
//   <|close|>call<|sep|>
//   <|open|>call tool="run" index="2"<|sep|>
//     <|open|>json type="object"<|sep|>{"cmd": "ls"}<|close|>json<|sep|>
//   <|close|>call<|sep|>
//
// Each argument carries its type: a "string" is written raw, every other
// type as JSON (the template's xtml_value), so the types decide the JSON of
// the arguments and nothing is guessed. Attribute values are escaped as the
// template's escape_attr does (&amp; and &quot;).

#include <optional>
#include <string>
#include <vector>

#include "cria/chat/output_parser.h"

namespace cria::chat {

// The calls of one tools block body (without the <|open|>tools<|sep|> and
// <|close|>tools<|sep|> around it), or nothing when the body is not complete,
// well-formed markup (then it is no tool call and the caller keeps its text).
// A call's id is "functions.NAME:INDEX" from its tool and index attributes,
// as llama.cpp names Kimi-K2's calls.
std::optional<std::vector<ToolCall>> parse_kimi_k3_calls(const std::string& body);

}  // namespace cria::chat
