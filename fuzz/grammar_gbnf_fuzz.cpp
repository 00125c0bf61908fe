// libFuzzer target: the GBNF parser and the grammar automaton.
// Input: grammar text, optionally followed by "\x00" and bytes to match.
// Any input may be rejected with cria::Error; nothing may crash, and a
// grammar that parses must print back to GBNF that parses again.

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "cria/core/error.h"
#include "cria/grammar/automaton.h"
#include "cria/grammar/gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    size_t split = input.find('\0');
    std::string_view text = input.substr(0, split);
    std::string_view bytes = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
    cria::grammar::Grammar grammar;
    try {
        grammar = cria::grammar::parse_gbnf(text, "root", [](std::string_view t) { return t.size() < 4 ? static_cast<int32_t>(t.size()) : -1; });
    } catch (const cria::Error&) {
        return 0;
    }
    try {
        (void)cria::grammar::parse_gbnf(grammar.to_gbnf());
    } catch (const cria::Error&) {
        std::abort();  // the printer wrote something the parser refuses
    }
    try {
        cria::grammar::Automaton automaton(std::make_shared<const cria::grammar::Grammar>(std::move(grammar)));
        cria::grammar::StateId s = automaton.initial();
        for (size_t i = 0; i < bytes.size() && i < 64 && s != cria::grammar::kDeadState; ++i) {
            s = automaton.step(s, static_cast<uint8_t>(bytes[i]));
            if (s != cria::grammar::kDeadState) (void)automaton.can_end(s);
        }
        if (s != cria::grammar::kDeadState) (void)automaton.step_token(s, 1);
    } catch (const cria::Error&) {
        // "too ambiguous" is a clean refusal
    }
    return 0;
}
