// libFuzzer target: JSON Schema -> GBNF. Input: JSON text. Invalid JSON is
// skipped; a schema may be refused with cria::Error; whatever the converter
// emits must be a grammar our parser accepts.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cria/core/error.h"
#include "cria/grammar/gbnf.h"
#include "cria/grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    nlohmann::json schema = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
    if (schema.is_discarded()) return 0;
    std::string gbnf;
    try {
        gbnf = cria::grammar::json_schema_to_gbnf(schema);
    } catch (const cria::Error&) {
        return 0;
    }
    try {
        (void)cria::grammar::parse_gbnf(gbnf);
    } catch (const cria::Error&) {
        std::abort();  // the converter wrote an invalid grammar
    }
    if (schema.is_object()) {
        try {
            (void)cria::grammar::tool_call_grammar(nlohmann::json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", schema}}}}}));
        } catch (const cria::Error&) {
        }
    }
    return 0;
}
