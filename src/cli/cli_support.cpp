#include "cli_support.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "nnmem/diagnostic.hpp"
#include "nnmem/units.hpp"

namespace nnmem::cli {

namespace {

std::optional<std::int64_t> to_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return v;
}

// "0" as it is, anything that is not an integer quoted: "'abc'".
std::string found(const std::string& text) { return to_integer(text) ? text : "'" + text + "'"; }

// The closest of `candidates` to a mistyped `word`: one that starts the other ("--batch" for
// "--batchsize"), else the nearest by edit distance.
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  for (const auto& c : candidates)
    if ((word.rfind(c, 0) == 0 || c.rfind(word, 0) == 0) && c.size() > best.size()) best = c;
  return best.empty() ? nearest_name(word, candidates) : best;
}

}  // namespace

CLI::Validator integer_between(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto v = to_integer(text);
        if (v && *v >= lo && *v <= hi) return {};
        return "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", found " + found(text);
      },
      "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = to_integer(text);
        return v && *v >= 1 ? std::string() : "expected a positive integer, found " + found(text);
      },
      "POSITIVE");
}

CLI::Validator power_of_two_or_zero() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = to_integer(text);
        return v && *v >= 0 && (*v & (*v - 1)) == 0 ? std::string()
                                                     : "expected a power of two (1, 2, 4, 8, ...) or 0, found " + found(text);
      },
      "POWER OF 2");
}

CLI::Validator one_of(std::vector<std::string> words) {
  std::string set;
  for (const auto& w : words) set += (set.empty() ? "" : ",") + w;
  return CLI::Validator(
      [words, set](std::string& text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end()) return {};
        const std::string near = nearest_name(text, words);
        return text + " not in {" + set + "}" + (near.empty() ? "" : "; did you mean '" + near + "'?");
      },
      "{" + set + "}");
}

std::int64_t parse_size_option(const std::string& option, const std::string& text) {
  SizeProblem problem = SizeProblem::None;
  const auto bytes = parse_bytes(text, &problem);
  if (problem == SizeProblem::TooLarge)
    throw CLI::ValidationError(option, "'" + text + "' is too large; a size must be below 2^63 bytes (about 9.2 EB)");
  if (!bytes) throw CLI::ValidationError(option, "expected a size such as 500MiB or 1.2GB, found '" + text + "'");
  return *bytes;
}

// CLI11 says only "A subcommand is required" for `nnmem estimat spec.yaml`.
std::string first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return "";
    if (!arg.empty() && arg[0] == '-') continue;  // the global flags (--help, --version) take no value
    return arg;
  }
  return "";
}

void check_command(int argc, char** argv, const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::string listed;  // "estimate, check, fit or layers"
  for (std::size_t i = 0; i < names.size(); ++i) listed += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  const std::string arg = first_word(argc, argv);
  if (arg.empty() || std::find(names.begin(), names.end(), arg) != names.end()) {
    if (argc == 1) throw UsageError("a command is required: " + listed);
    return;
  }
  const std::string near = nearest_name(arg, names);
  throw UsageError("unknown command '" + arg + "'" + (near.empty() ? "; expected " + listed : " (did you mean '" + near + "'?)"));
}

// Arguments left over (the apps allow extras so that they can be named here, with a hint).
void check_extras(const CLI::App& app) {
  const std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return;
  const auto option = std::find_if(extras.begin(), extras.end(), [](const std::string& s) { return s.size() > 1 && s[0] == '-'; });
  if (option == extras.end()) throw UsageError("unexpected argument '" + extras.front() + "'");
  const std::string name = option->substr(0, option->find('='));
  std::vector<std::string> known;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) known.push_back("--" + l);
    for (const auto& s : opt->get_snames()) known.push_back("-" + s);
  }
  const std::string near = closest(name, known);
  throw UsageError("unknown option '" + name + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

}  // namespace nnmem::cli
