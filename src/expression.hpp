// `$expressions` in specs: `$planes * 4`, `$index == 0 ? 2 : 1`, `$width`. Integers, reals,
// booleans and strings; + - * / // % with checked integer arithmetic; comparisons; && || !;
// and `cond ? a : b`. Identifiers are variables (spec variables, block parameters, `index`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

namespace nnmem::expr {

using Scalar = std::variant<std::int64_t, double, bool, std::string>;

/// "the integer 3", "the string 'same'"
std::string describe(const Scalar& value);

/// A problem in an expression; `offset` is the 0-based character position within it.
class ExprError : public std::runtime_error {
 public:
  ExprError(const std::string& message, std::size_t offset)
      : std::runtime_error(message), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

/// Looks a variable up; std::nullopt when it is not defined.
using Lookup = std::function<std::optional<Scalar>(const std::string&)>;

/// Evaluates `text` (without the leading `$`). Throws ExprError.
Scalar evaluate(const std::string& text, const Lookup& lookup);

}  // namespace nnmem::expr
