#pragma once
// The sampling flags (sampling::options(): --temp, --top-k, --repeat-last-n,
// --dry-*, --xtc-*, --mirostat*, --logit-bias, --samplers, --ignore-eos, ...)
// on a CLI11 command, shared by `cria run` and `cria serve` so they spell,
// default and check them alike. "-s N" is read with the one-dash flags
// (runtime::take_dash_options) because CLI11 would read "-sys" as "-s ys".

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "cria/core/error.h"
#include "cria/sampling/options.h"

namespace cria::tools {

// `owner` keeps the state alive for the parse callbacks (the command's options).
template <class Owner>
void add_sampling_flags(CLI::App& cmd, const std::shared_ptr<Owner>& owner, sampling::SamplingFlagState Owner::*state) {
    for (const auto& o : sampling::options()) {
        // CLI11 reports its own exception type; a cria::Error here would escape main's handler.
        if (!o.takes_value) {
            cmd.add_flag_callback(o.flags, [owner, state, &o] { o.apply((*owner).*state, ""); }, o.help);
            continue;
        }
        cmd.add_option_function<std::vector<std::string>>(
               o.flags,
               [owner, state, &o](const std::vector<std::string>& values) {
                   try {
                       for (const auto& v : values) o.apply((*owner).*state, v);
                   } catch (const Error& e) {
                       throw CLI::ValidationError(e.what());
                   }
               },
               o.help)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
            ->type_size(1)
            ->allow_extra_args(false);
    }
}

}  // namespace cria::tools
