// `$expressions` in specs: `$planes * 4`, `$index == 0 ? 2 : 1`, `$width`. Integers, reals,
// booleans and strings; + - * / // % with checked integer arithmetic; comparisons; && || !;
// `cond ? a : b`; round, floor, ceil, sqrt, min and max as Python's built-ins. Identifiers are variables (spec variables, block parameters, `index`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace nnmem::expr {

using Scalar = std::variant<std::int64_t, double, bool, std::string>;

/// "the integer 3", "the string 'same'"
std::string describe(const Scalar& value);

/// How deeply an expression may nest (parentheses, unary operators, `?:` chains). The parser
/// recurses once per level, so the bound keeps a hostile spec from exhausting the stack; no
/// real expression comes near it.
inline constexpr int kMaxExpressionDepth = 500;

/// How long an expression may be, in characters: a hundred times the 10,000 of the longest
/// bench/pathological.py expects to work. Compiled, an expression takes 24 bytes a token, so a
/// 9 MB one read 4.6 million variables through 220 MB of operations. The loader refuses a longer one.
inline constexpr std::size_t kMaxExpressionLength = std::size_t{1} << 20;

/// A problem in an expression; `offset` is the 0-based character position within it.
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& message, std::size_t offset, std::string unknown_variable = {})
      : std::runtime_error(message), offset_(offset), unknown_variable_(std::move(unknown_variable)) {}
  std::size_t offset() const { return offset_; }
  /// The name that is not a variable, when that is the problem (for "did you mean" hints).
  const std::string& unknown_variable() const { return unknown_variable_; }

 private:
  std::size_t offset_;
  std::string unknown_variable_;
};

/// Looks a variable up; std::nullopt when it is not defined. It may throw ExprError (e.g. for a
/// variable that holds a list, which arithmetic cannot use).
using Lookup = std::function<std::optional<Scalar>(const std::string&)>;

/// Evaluates `text` (without the leading `$`). Throws ExprError, never OverflowError: integer
/// arithmetic is checked and an overflow is reported as "integer overflow: … does not fit".
Scalar evaluate(const std::string& text, const Lookup& lookup);

/// One operation of a compiled expression; its operands are earlier operations (by index). Its
/// literal or name is kept once in the Program (an expression reading a variable 4.6 million
/// times held a copy of its name, and of an empty value, in each).
struct Operation {
  enum class Kind : std::uint8_t { Literal, Variable, Condition, Choose, Negate, Not, Binary, Function };
  Kind kind;
  std::uint32_t arg = 0;  // Literal: Program::literals[arg]; Variable, Binary (its operator, or min, max), Function: Program::names[arg]
  std::uint32_t offset;   // where in the text, for errors
  int a = -1, b = -1;     // operands (Condition: the test; Choose: the branches)
  int c = -1;             // Choose: the test
};

/// An expression parsed once, evaluated as often as a repeated block needs it: its operations
/// in the order evaluate() computes them while parsing, so that values and errors are the same.
struct Program {
  std::vector<Operation> ops;
  std::vector<Scalar> literals;
  std::vector<std::string> names;  // variables, operators and functions, each once
  const Scalar& literal(const Operation& op) const { return literals[op.arg]; }
  const std::string& name(const Operation& op) const { return names[op.arg]; }
};

/// Parses `text` once; nullptr when it does not parse (evaluate(text, …) then gives the error,
/// with any error it meets before that one, as it always has).
std::shared_ptr<const Program> compile(const std::string& text);
/// The value (or the error) evaluate(text, lookup) gives, without parsing again.
Scalar evaluate(const Program& program, const Lookup& lookup);

}  // namespace nnmem::expr
