// The nnmem command line: parses flags, calls the library, prints. Each subcommand lives in its
// own file (cmd_*.cpp) with its options struct; here they are registered and dispatched. Every
// library error arrives as nnmem::Error and exits with code 1, and so does every command-line
// mistake, in words that say what was expected and what was found; 2 means "does not fit".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"

namespace nnmem::cli {

void write_file(const std::string& option, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!(out << text) || !out.flush()) throw CLI::ValidationError(option, "cannot write '" + path + "'");
  std::cerr << "nnmem: wrote " << path << '\n';
}

}  // namespace nnmem::cli

int main(int argc, char** argv) {
  using namespace nnmem::cli;
  std::ios::sync_with_stdio(false);  // output goes through std::cout alone: buffer it (JSON can be hundreds of MB)
  CLI::App app{"nnmem: how much memory a neural network needs, from a YAML spec, before any framework code exists"};
  app.set_version_flag("--version", "nnmem 0.1.0");
  app.require_subcommand(1);
  app.allow_extras();
  app.footer("Exit status: 0 success, 1 an error (located in the spec when it is one), 2 the step does not fit the budget.\n");

  // Only the command named on the line is built (its options are most of a short run's start-up);
  // every command when none is named, or an unknown one, so that help and the error list them all.
  struct Command {
    const char* name;
    Subcommand (*add)(CLI::App&);
  };
  static constexpr Command kCommands[] = {{"estimate", add_estimate}, {"check", add_check}, {"fit", add_fit},
                                          {"compare", add_compare},   {"sweep", add_sweep}, {"checkpoint", add_checkpoint},
                                          {"inspect", add_inspect},   {"import", add_import}, {"megatron", add_megatron},
                                          {"layers", add_layers}};
  const std::string named = first_word(argc, argv);
  const bool known = std::any_of(std::begin(kCommands), std::end(kCommands), [&](const Command& c) { return named == c.name; });
  std::vector<Subcommand> commands;
  for (const Command& c : kCommands)
    if (!known || named == c.name) commands.push_back(c.add(app));
  for (const Subcommand& c : commands) c.app->allow_extras();

  const auto fail = [](const std::string& message) {
    std::cerr << "nnmem: error: " << message << "\nRun with --help for more information.\n";
    return kExitError;
  };
  try {
    check_command(argc, argv, app);
    app.parse(argc, argv);
    check_extras(app);
    for (const Subcommand& c : commands)
      if (*c.app) check_extras(*c.app);
    for (const Subcommand& c : commands)
      if (*c.app) return c.run();
    return kExitError;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--batch: 1 required INT:INT in [1 - 1099511627776] missing".
    const std::string what = e.what();
    return fail(what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0 ? what.substr(0, what.find(':')) + ": needs a value"
                                                                                      : what);
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  } catch (const UsageError& e) {
    return fail(e.what());
  } catch (const nnmem::Error& e) {
    // An error of the command line's values (no file to place it in) is said as the command's.
    if (e.loc().file.empty() && !e.loc().known()) return fail(e.message());
    std::cerr << e.format() << '\n';
    return kExitError;
  } catch (const std::bad_alloc&) {
    std::cerr << "nnmem: error: out of memory\n";
    return kExitError;
  } catch (const std::logic_error& e) {
    // What the library checks of itself (a simulation that leaves a tensor behind, a replay that
    // frees what it never made): a bug, said to be one rather than passed off as the input's.
    std::cerr << "nnmem: internal error: " << e.what() << " (a bug in nnmem: please report it with this command line)\n";
    return kExitError;
  } catch (const std::exception& e) {
    // The library turns what it can into located errors; this is the last resort (an
    // OverflowError it could not place), still a clear message and exit code 1.
    std::cerr << "nnmem: error: " << e.what() << '\n';
    return kExitError;
  }
}
