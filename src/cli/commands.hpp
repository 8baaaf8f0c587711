// The subcommands: each file under src/cli/ adds one (its options struct, its flags, what it
// runs); main.cpp only parses and dispatches.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace nnmem::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // the exit code
};

Subcommand add_estimate(CLI::App& parent);
Subcommand add_check(CLI::App& parent);
Subcommand add_fit(CLI::App& parent);
Subcommand add_compare(CLI::App& parent);
Subcommand add_sweep(CLI::App& parent);
Subcommand add_checkpoint(CLI::App& parent);
Subcommand add_inspect(CLI::App& parent);
Subcommand add_import(CLI::App& parent);
Subcommand add_layers(CLI::App& parent);
Subcommand add_megatron(CLI::App& parent);

/// Writes `text` to `path` (a CLI::Error naming `option` when it cannot) and says so on stderr.
void write_file(const std::string& option, const std::string& path, const std::string& text);

}  // namespace nnmem::cli
