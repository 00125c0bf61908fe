// libFuzzer target: model output text through every output format. Parsing in
// one piece and streaming in two pieces (split chosen by the first byte) must
// agree exactly; nothing may crash.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cria/chat/output_parser.h"

namespace {

void add(cria::chat::ParsedOutput& acc, const cria::chat::ParsedOutput& d) {
    acc.reasoning += d.reasoning;
    acc.content += d.content;
    acc.tool_calls.insert(acc.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const size_t split = data[0] % size;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    using cria::chat::OutputFormat;
    for (OutputFormat f : {OutputFormat::Generic, OutputFormat::Hermes, OutputFormat::Llama3, OutputFormat::Mistral,
                           OutputFormat::DeepSeek, OutputFormat::Harmony}) {
        for (bool open : {false, true}) {
            const cria::chat::OutputParserOptions opt{f, open};
            const auto whole = cria::chat::parse_output(text, opt);
            cria::chat::StreamingOutputParser p(opt);
            cria::chat::ParsedOutput acc;
            const size_t cut = std::min(split, text.size());
            add(acc, p.push(std::string_view(text).substr(0, cut)));
            add(acc, p.push(std::string_view(text).substr(cut)));
            add(acc, p.finish());
            if (acc.reasoning != whole.reasoning || acc.content != whole.content || !(acc.tool_calls == whole.tool_calls)) std::abort();
        }
    }
    return 0;
}
