// Command-line support for the nnmem executable (not the library): validators whose messages
// say what was expected and what was found, and the mistakes CLI11 words unclearly (unknown
// commands and options, with "did you mean").
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnmem::cli {

/// A command-line mistake that CLI11 does not catch, or that it words unclearly.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// CLI11 validators: CLI11 prints "--option: <the message>".
CLI::Validator integer_between(std::int64_t lo, std::int64_t hi);
CLI::Validator positive_integer();
CLI::Validator power_of_two_or_zero();
CLI::Validator one_of(std::vector<std::string> words);

/// A size such as "500MiB", "24GB" or "0" (for --overhead and --budget); throws a
/// CLI::ValidationError naming `option` when it is not one.
std::int64_t parse_size_option(const std::string& option, const std::string& text);

/// Throws UsageError for an unknown command (`nnmem estimat …`), with a suggestion.
/// The command named on the line: its first argument that is not a flag ("" if none).
std::string first_word(int argc, char** argv);
void check_command(int argc, char** argv, const CLI::App& app);
/// Throws UsageError for arguments left over after parsing: unknown options, with a suggestion.
void check_extras(const CLI::App& app);

}  // namespace nnmem::cli
