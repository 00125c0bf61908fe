#pragma once
// A Jinja2 template engine, written to render chat templates byte for byte as
// Python's Jinja2 renders them under Hugging Face transformers' settings
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls,
// the {% generation %} tag). See docs in src/chat/README.md for what is
// supported and where it deliberately differs.
//
// Templates are untrusted input: parsing and rendering are bounded by Limits,
// and every failure is a TemplateError (a cria::Error) with Jinja2's
// exception class, message and the template line.

#include <cstdint>
#include <memory>
#include <string>

#include "cria/chat/jinja_value.h"

namespace cria::jinja {

struct Limits {
    int max_depth = 256;                       // nesting of blocks/expressions and of macro calls
    size_t max_output_bytes = 64u << 20;       // rendered text, including macro and block-set output
    uint64_t max_steps = 20'000'000;           // loop iterations + statements + calls
    size_t max_collection_size = 1u << 22;     // items in one list/string built by range, *, etc.
};

class Template {
public:
    // Parses `source`; throws TemplateError("TemplateSyntaxError", ...) on bad syntax.
    explicit Template(const std::string& source, Limits limits = {});
    ~Template();
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;

    // Renders with `variables` (a dict Value: name -> value) on top of the
    // built-in globals (range, dict, namespace, cycler, joiner).
    std::string render(const Value& variables) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cria::jinja
