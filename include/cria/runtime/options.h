#pragma once
// Parsing of the option values the runtime commands share (cria run, bench,
// perplexity), so every command spells and checks them the same way.

#include <cstdint>
#include <string>

#include "cria/core/element_type.h"
#include "cria/gguf/load_mode.h"

namespace cria::runtime {

// "f32", "f16", "bf16", "q8_0", "q4_0" (-ctk / -ctv). Throws cria::Error otherwise.
ElementType parse_cache_type(const std::string& name);
// As gguf::parse_load_mode, but throws cria::Error naming the choices.
gguf::LoadMode parse_load_mode_or_throw(const std::string& name);

}  // namespace cria::runtime

#include <utility>
#include <vector>

namespace cria::runtime {

// llama.cpp spells some options with one dash and several letters (-ub,
// -ctk, -ctv), which CLI11 reads as clusters of one-letter flags. Commands
// let CLI11 pass those through as extras (allow_extras) and read them here:
// `args` are the extras in order, `known` maps each spelling ("-ub") to the
// string that receives its value. Throws cria::Error for anything else.
void take_dash_options(const std::vector<std::string>& args,
                       const std::vector<std::pair<std::string, std::string*>>& known);

}  // namespace cria::runtime

namespace cria::runtime {
// A non-negative decimal count for option `what`; throws cria::Error otherwise.
uint32_t parse_count(const std::string& text, const std::string& what);
}  // namespace cria::runtime
