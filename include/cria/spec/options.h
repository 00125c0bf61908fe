#pragma once
// The speculative-decoding flags of `cria run`, `cria speculative` and `cria
// serve`, in one table so that every command spells and checks them alike
// (CLI11 is a tools dependency, so the library only names and applies them).
//
//   for (const auto& o : spec::options())
//       cmd.add_option_function<std::string>(o.flags, [p, &o](const std::string& v) { o.apply(*p, v); }, o.help);
//
// "-md FILE" is a one-dash multi-letter flag: read it with
// runtime::take_dash_options and apply it with apply_option(p, "-md", FILE).

#include <functional>
#include <string>
#include <vector>

#include "cria/spec/params.h"

namespace cria::spec {

struct Option {
    std::string flags;  // CLI11 spelling, e.g. "--spec-draft-n-max"
    std::string help;
    std::function<void(SpecParams&, const std::string&)> apply;  // throws cria::Error on a bad value
};

const std::vector<Option>& options();
// Applies one flag by any of its names ("--spec-type", "-md", ...). Throws cria::Error.
void apply_option(SpecParams& params, const std::string& flag, const std::string& value);

}  // namespace cria::spec
