#pragma once
// The speculative-decoding flags (spec::options(): -md, --spec-type,
// --spec-draft-n-max, ...) on a CLI11 command, shared by `cria run`,
// `cria serve` and `cria speculative` so they spell and check them alike.

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "cria/core/error.h"
#include "cria/spec/options.h"
#include "cria/spec/params.h"

namespace cria::tools {

// `owner` keeps `params` alive for the parse callbacks (the command's options).
template <class Owner>
void add_spec_flags(CLI::App& cmd, const std::shared_ptr<Owner>& owner, spec::SpecParams Owner::*params) {
    for (const auto& o : spec::options()) {
        cmd.add_option_function<std::string>(
            o.flags,
            [owner, params, &o](const std::string& v) {
                // CLI11 reports its own exception type; a cria::Error here would escape main's handler.
                try {
                    o.apply((*owner).*params, v);
                } catch (const Error& e) {
                    throw CLI::ValidationError(e.what());
                }
            },
            o.help);
    }
}

}  // namespace cria::tools
