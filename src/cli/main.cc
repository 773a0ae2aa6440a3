// The tierscope command line: parses, dispatches to the one subcommand given, and turns
// anything that escapes it into one line and a non-zero status (never an abort).
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/exceptions.h"
#include "core/text.h"
#include "tierscope/version.h"

namespace {

int Main(int argc, char** argv) {
  using tierscope::cli::Command;
  tierscope::cli::SetCommandLine(argc, argv);
  CLI::App app{"tierscope: tune transformer inference tier by tier (framework, system, kernel)"};
  app.set_version_flag("--version", std::string("tierscope ") + TIERSCOPE_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands;
  for (auto reg : {tierscope::cli::RegisterBench, tierscope::cli::RegisterRun,
                   tierscope::cli::RegisterAnalyze, tierscope::cli::RegisterWhatIf, tierscope::cli::RegisterExport, tierscope::cli::RegisterKernel,
                   tierscope::cli::RegisterSweep, tierscope::cli::RegisterValidate,
                   tierscope::cli::RegisterLab, tierscope::cli::RegisterTokenize,
                   tierscope::cli::RegisterServe, tierscope::cli::RegisterLoad,
                   tierscope::cli::RegisterDevice}) {
    reg(app, &commands);
  }
  // A first word that is no command: CLI11 would say only that a subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const Command& c : commands) {
      known = known || c.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::cerr << "tierscope: error: '" << tierscope::Printable(argv[1]) << "' is not a command (the commands: "
                << names << "; tierscope --help says what each does)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tierscope: error: " << e.what() << "\n";
    return 2;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return 2;
}

}  // namespace

// The catch-all: whatever escapes a command (an allocation that failed, a library's
// exception) ends in one line and a non-zero status, never an abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (...) {
    return tierscope::cli::Fail(tierscope::StatusFromCurrentException("tierscope"));
  }
}
