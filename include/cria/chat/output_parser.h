#pragma once
// Splits what a model generated into reasoning, visible content and tool
// calls, for the output conventions of the common model families:
//
//   Hermes / Qwen     <think>…</think>  <tool_call>{"name":…, "arguments":…}</tool_call>
//   Llama 3.x         a bare JSON object {"name":…, "parameters":…} (or after <|python_tag|>)
//   Mistral           [THINK]…[/THINK]  [TOOL_CALLS][{…}] or [TOOL_CALLS]name[ARGS]{…}
//   DeepSeek R1/V3    <think>…</think>  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>…<｜tool▁sep｜>…<｜tool▁call▁end｜>…
//   GPT-OSS (harmony) <|channel|>analysis<|message|>…<|end|>, final, commentary to=functions.NAME …<|call|>
//   Muse Glimmer      (after the prompt's "<|start|>assistant") to=self<|message|>…<|eom|>, to=user<|message|>…,
//                     to=TOOL<|message|><atem:function_calls>…</atem:function_calls>, messages joined by
//                     <|eom|><|start|>assistant
//   Kimi-K3           (after the prompt's "<|open|>think<|sep|>") …<|close|>think<|sep|><|open|>response<|sep|>…
//                     <|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
//                     typed <|open|>argument …<|close|>argument<|sep|> or one <|open|>json …<|close|>json<|sep|>
//                     <|close|>call<|sep|>…<|close|>tools<|sep|>
//
// Reasoning markers <think>, <seed:think>, <thinking> and [THINK] are
// recognised in every format. StreamingOutputParser produces the same result
// in pieces as text arrives, holding back anything that could still become a
// marker, so a client never sees half of "<tool_call>".

#include <string>
#include <string_view>
#include <vector>

namespace cria::chat {

enum class OutputFormat { Generic, Hermes, Llama3, Mistral, DeepSeek, Harmony, MuseGlimmer, KimiK3 };

// "generic", "hermes" (also "qwen"), "llama3", "mistral", "deepseek", "harmony" (also "gpt-oss"),
// "muse-glimmer", "kimi-k3".
// Throws cria::Error for an unknown name.
OutputFormat output_format_from_name(const std::string& name);

// Guesses the output convention from a chat template's source (the markers it
// uses to show past tool calls). Generic when nothing matches.
OutputFormat detect_output_format(const std::string& chat_template_source);

// True when a rendered prompt ends inside an open reasoning block (e.g. the
// generation prompt ended in "<think>\n"), for OutputParserOptions.
bool prompt_opens_reasoning(const std::string& rendered_prompt);

struct ToolCall {
    std::string id;         // as the model gave it, or empty
    std::string name;
    std::string arguments;  // JSON text (compact) of the arguments object
    bool operator==(const ToolCall&) const = default;
};

struct ParsedOutput {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
};

struct OutputParserOptions {
    OutputFormat format = OutputFormat::Generic;
    // The prompt already opened the reasoning block (e.g. the generation
    // prompt ends in "<think>\n"), so the output starts inside it.
    bool reasoning_starts_open = false;
};

// What one push() or finish() adds: new reasoning and content text, and the
// tool calls completed since the previous call.
using OutputDelta = ParsedOutput;

class StreamingOutputParser {
public:
    explicit StreamingOutputParser(OutputParserOptions options = {});
    OutputDelta push(std::string_view text);
    // End of generation: releases held-back text and any unterminated block.
    OutputDelta finish();

private:
    enum class Mode { Content, Reasoning, Collect, Header, JsonCandidate };
    void step(OutputDelta& out, bool at_end);
    std::vector<std::string> markers_for_mode() const;
    void on_marker(const std::string& marker, OutputDelta& out);
    void on_muse_glimmer_marker(const std::string& marker, OutputDelta& out);
    void end_collect(OutputDelta& out, bool terminated);
    void emit(OutputDelta& out, const std::string& text);

    OutputParserOptions opt_;
    Mode mode_ = Mode::Content;
    std::string buffer_;          // unprocessed text
    std::string collected_;       // body of a tool-call block or harmony header
    std::string collect_marker_;  // the marker that opened the block
    std::string reasoning_end_;   // closing marker of the open reasoning block
    std::string recipient_;       // harmony, muse-glimmer: tool name of the current message
    bool content_started_ = false;
};

// The whole output at once; equal to feeding it to StreamingOutputParser in
// any pieces and concatenating the deltas.
ParsedOutput parse_output(std::string_view text, const OutputParserOptions& options = {});

}  // namespace cria::chat
