// The cria binary: a thin front over the subcommands in this folder.

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cria/core/error.h"
#include "cria/core/version.h"
#include "tools/command.h"
#include "tools/pipeline_flags.h"

#ifdef CRIA_HAVE_MPI
#include "cria/distributed/mpi_pipeline.h"
#include "cria/distributed/mpi_world.h"
#include "cria/runtime/pipeline.h"
#endif

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

namespace {

int run_command_line(int argc, char** argv) {
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

}  // namespace

int main(int argc, char** argv) {
    // --layer-split and --mpi-timeout may stand anywhere on the command line
    // and apply to every subcommand: they are taken out before the
    // subcommand's own parser sees it.
    std::vector<char*> args(argv, argv + argc);
    cria::tools::PipelineFlags flags;
    try {
        flags = cria::tools::take_pipeline_flags(args);
    } catch (const cria::Error& e) {
        std::fprintf(stderr, "cria: error: %s\n", e.what());
        return 1;
    }
    int n_args = static_cast<int>(args.size());
    char** arg_values = args.data();
#ifdef CRIA_HAVE_MPI
    if (cria::distributed::launched_with_several_ranks()) {
        // Every rank runs this binary; rank 0 runs the subcommand with its
        // stage of the model, the others serve rank 0 until it is done.
        cria::distributed::World world(&n_args, &arg_values, flags.timeout_s);
        if (world.rank() > 0) {
            cria::distributed::run_worker(world);
            return 0;
        }
        int status = 1;
        {
            cria::distributed::RootPipeline pipeline(world, flags.layer_split);
            cria::runtime::install_pipeline(&pipeline);
            status = run_command_line(n_args, arg_values);
            cria::runtime::install_pipeline(nullptr);
        }
        return status;
    }
    if (!flags.layer_split.empty()) {
        std::fprintf(stderr, "cria: error: --layer-split needs several processes: start cria with mpirun -np N\n");
        return 1;
    }
#else
    if (flags.given) {
        std::fprintf(stderr, "cria: error: --layer-split and --mpi-timeout need MPI, which this cria was built without "
                             "(install libopenmpi-dev and rebuild)\n");
        return 1;
    }
#endif
    return run_command_line(n_args, arg_values);
}
