#pragma once
// Every `cria` subcommand lives in its own file in src/tools/ and registers
// itself here with CRIA_REGISTER_COMMAND. main.cpp builds the command line from
// the registry, so adding a subcommand never touches another file.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace cria::tools {

// Declares the subcommand's flags on `cmd` and returns the function that runs
// it once the command line has been parsed. The function returns the exit code.
using CommandSetup = std::function<std::function<int()>(CLI::App& cmd)>;

struct CommandSpec {
    std::string name;
    std::string summary;
    CommandSetup setup;
};

// All registered subcommands, sorted by name.
std::vector<CommandSpec>& command_registry();

struct CommandRegistrar {
    explicit CommandRegistrar(CommandSpec spec);
};

}  // namespace cria::tools

#define CRIA_REGISTER_COMMAND(ident, ...) \
    static const ::cria::tools::CommandRegistrar cria_command_registrar_##ident{::cria::tools::CommandSpec{__VA_ARGS__}}
