// The cria binary: a thin front over the subcommands in this folder.

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>

#include "cria/core/error.h"
#include "cria/core/version.h"
#include "tools/command.h"

namespace cria::tools {

std::vector<CommandSpec>& command_registry() {
    static std::vector<CommandSpec> commands;
    return commands;
}

CommandRegistrar::CommandRegistrar(CommandSpec spec) {
    auto& commands = command_registry();
    commands.push_back(std::move(spec));
    std::sort(commands.begin(), commands.end(),
              [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
}

}  // namespace cria::tools

int main(int argc, char** argv) {
    using namespace cria::tools;
    CLI::App app{"cria: run large language models from GGUF files", "cria"};
    app.set_version_flag("--version",
                         std::string("cria ") + cria::version_string() + " (commit " + cria::git_commit() +
                             ", build " + std::to_string(cria::build_number()) + ")",
                         "Print the version, git commit and build number, then exit");
    app.require_subcommand(1);
    app.fallthrough(false);

    std::map<std::string, std::function<int()>> runners;
    for (const CommandSpec& spec : command_registry()) {
        CLI::App* cmd = app.add_subcommand(spec.name, spec.summary);
        runners[spec.name] = spec.setup(*cmd);
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }

    for (const CLI::App* cmd : app.get_subcommands()) {
        try {
            return runners.at(cmd->get_name())();
        } catch (const cria::Error& e) {
            std::fprintf(stderr, "cria %s: error: %s\n", cmd->get_name().c_str(), e.what());
            return 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cria %s: internal error: %s\n", cmd->get_name().c_str(), e.what());
            return 2;
        }
    }
    return 1;
}
