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

// Whether the command line gave any of those flags (by any of its names).
inline bool any_spec_flag_given(const CLI::App& cmd) {
    for (const auto& o : spec::options()) {
        const std::string first = o.flags.substr(0, o.flags.find(','));
        if (cmd.count(first) > 0) return true;
    }
    return false;
}

}  // namespace cria::tools
