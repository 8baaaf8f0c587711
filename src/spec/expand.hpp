// Values during expansion: the scopes that `$expressions` see, and the evaluation of a raw value
// into a Value with errors that name what the value belongs to, and the inputs and the model's
// dtype as the spec and --input give them (expand_values.cpp). expand.cpp
// uses them to expand layers and blocks.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "raw_spec.hpp"

namespace nnmem::raw {

class ExpansionBudget;

/// Variables visible to expressions: a chain of scopes (`index`, block parameters, the spec's).
/// Lookups are indexed: a spec may declare many variables and use them in many layers.
struct VarScope {
  const VarScope* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;    // in order; add() keeps `index` in step
  std::unordered_map<std::string, std::size_t> index;  // name -> position in vars
  /// While the spec's own variables are evaluated: those below the one being evaluated, with
  /// their lines, so that using one says "defined later" rather than "unknown".
  std::map<std::string, int> later;

  void add(std::string name, Value value);
  const Value* find(const std::string& name) const;
  std::vector<std::string> names() const;
};

/// Evaluates a value: a literal as it is, a list item by item, `$name` alone as the variable's
/// value (lists included), any other `$expression` by the evaluator. Errors are located at the
/// value and start with "SUBJECT: KEY: " (either may be empty), e.g.
/// "Linear 'fc1': out_features: in '$width *': expected a value after '*', …".
Value evaluate(const RawValue& raw, const VarScope& vars, const std::string& subject, const std::string& key);

/// The same, for a value that must be an integer of at least `min` (`repeat`, input sizes);
/// "SUBJECT: KEY must be at least 1, found 0".
std::int64_t evaluate_int(const RawValue& raw, const VarScope& vars, const std::string& subject,
                          const std::string& key, std::int64_t min);

/// The same, for a value that must be true or false (`when`, `trainable`).
bool evaluate_bool(const RawValue& raw, const VarScope& vars, const std::string& subject, const std::string& key);

/// The spec's variables, in order, with the --set overrides applied (an unknown or repeated
/// NAME is an error). Each may use the ones above it.
VarScope evaluate_variables(const RawSpec& spec, const LoadOptions& options);

/// The --input NAME=[…] overrides by input name: each a raw list of sizes located at the input
/// it replaces (an unknown or repeated NAME, or a text that is not a list of sizes, is an error).
std::map<std::string, RawValue> input_overrides(const RawSpec& spec, const LoadOptions& options);

/// The model's dtype (`dtype:`): a floating-point one, else an error located at it.
DType float_dtype(const Named& n);

/// An input as the spec gives it or --input overrides its shape (`input_shapes`), its sizes
/// evaluated among the spec's variables; a dtype it names must be one nnmem knows.
InputSpec expand_input(const RawInput& in, const std::map<std::string, RawValue>& input_shapes, const VarScope& globals);

/// A block instance's parameters: each argument given where the block is used (evaluated in
/// `vars`), else its default (evaluated among the parameters above it, which see `globals`). An
/// argument the block does not take, or a parameter given neither, is an error naming `who`.
VarScope block_arguments(const RawBlock& block, const RawEntry& use, const VarScope& vars, const VarScope& globals,
                         const std::string& who, ExpansionBudget& budget);

/// Appends the `register:` lists of the model (`module` "") or of a block instance ("model.2"),
/// their modules qualified (registration.cpp).
void add_registrations(const std::vector<RawRegister>& lists, const std::string& module,
                       std::vector<Registration>& out);
/// Appends a `modules:` list of the model or of a block instance, qualified (registration.cpp).
void add_modules(const std::vector<Named>& modules, const std::string& module, std::vector<std::string>& out);

/// `scope:` evaluated: the top-level members (a local name up to its first dot) whose modules sit
/// in the submodule `prefix` ("bert."; "" when its name is empty or there is no scope).
struct ModuleScope {
  std::string prefix;
  std::unordered_set<std::string> members;
  /// The module a top-level local name, or a `register`/`modules` name, stands for.
  std::string qualify(const std::string& local) const;
};
/// Evaluates and checks the spec's `scope` (registration.cpp): its name a dotted module name or
/// '', each member a top-level member listed once, no model-level `register` list naming one.
ModuleScope module_scope(const RawSpec& spec, const VarScope& vars);

/// The spec's loss terms: those `when` keeps, each kind a known loss and each weight a number
/// >= 0; `output` is the name as written, for the caller to resolve. expand_loss.cpp.
std::vector<LossSpec> expand_losses(const std::vector<RawLoss>& raw, const VarScope& vars);

/// " (did you mean 'x'?)", or "" when no candidate is close.
std::string suggestion(const std::string& word, const std::vector<std::string>& names);

}  // namespace nnmem::raw
