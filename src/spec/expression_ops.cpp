// Python's arithmetic for `$expressions` (expression_ops.hpp).
#include "expression_ops.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>

#include "nnmem/checked.hpp"

namespace nnmem::expr {

std::string describe(const Scalar& value) {
  struct Visitor {
    std::string operator()(std::int64_t v) const { return "the integer " + std::to_string(v); }
    std::string operator()(double v) const {
      if (std::isnan(v)) return "nan";
      std::ostringstream os;
      os << v;
      return "the number " + os.str();
    }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return "the string '" + v + "'"; }
  };
  return std::visit(Visitor{}, value);
}

namespace {

// Python's divmod of two floats (CPython's float_divmod): the quotient is the floor of the
// exact quotient (1 // 0.1 is 9.0, though 1 / 0.1 rounds to 10.0), the remainder takes the
// divisor's sign. y is not 0.
std::pair<double, double> float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  if (div == 0) return {std::copysign(0.0, x / y), mod};
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return {floordiv, mod};
}

bool equal(const Scalar& a, const Scalar& b) {
  const auto* ia = std::get_if<std::int64_t>(&a);
  const auto* ib = std::get_if<std::int64_t>(&b);
  const auto* ra = std::get_if<double>(&a);
  const auto* rb = std::get_if<double>(&b);
  if ((ia || ra) && (ib || rb))
    return (ia ? static_cast<double>(*ia) : *ra) == (ib ? static_cast<double>(*ib) : *rb) &&
           (!ia || !ib || *ia == *ib);
  return a == b;
}

}  // namespace

bool as_bool(const Scalar& v, std::size_t offset) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  throw ExprError("expected true or false, found " + describe(v), offset);
}

Scalar binary(std::string_view o, std::size_t offset, const Scalar& a, const Scalar& b) {
  if (o == "&&") return as_bool(a, offset) && as_bool(b, offset);
  if (o == "||") return as_bool(a, offset) || as_bool(b, offset);
  if (o == "==") return equal(a, b);
  if (o == "!=") return !equal(a, b);
  const auto* ia = std::get_if<std::int64_t>(&a);
  const auto* ib = std::get_if<std::int64_t>(&b);
  const bool numeric = (ia || std::holds_alternative<double>(a)) && (ib || std::holds_alternative<double>(b));
  if (!numeric)
    throw ExprError("'" + std::string(o) + "' needs numbers, found " + describe(a) + " and " + describe(b), offset);
  if (o == "min" || o == "max") {  // Python's: the first of equal values
    const bool second = binary(o == "min" ? "<" : ">", offset, b, a) == Scalar(true);
    return second ? b : a;
  }
  if (ia && ib) {
    const std::int64_t x = *ia, y = *ib;
    if (o == "+") return checked_add(x, y);
    if (o == "-") return checked_sub(x, y);
    if (o == "*") return checked_mul(x, y);
    if (o == "/" || o == "//" || o == "%") {
      if (y == 0) throw ExprError("division by zero", offset);
      // Python's divmod (and `/` on integers floors too, since sizes are integers): the
      // quotient floors, the remainder takes the divisor's sign. Of INT64_MIN and -1 only the
      // quotient, 2^63, does not fit; the remainder is 0 (and C's `%` would be undefined).
      if (y == -1) {
        if (o == "%") return std::int64_t{0};
        if (x == INT64_MIN) throw_overflow(std::string(o).c_str(), x, y);
      }
      const std::int64_t r = x % y;
      const bool floored = r != 0 && (r < 0) != (y < 0);
      if (o == "%") return floored ? r + y : r;
      return x / y - (floored ? 1 : 0);
    }
    if (o == "<") return x < y;
    if (o == ">") return x > y;
    if (o == "<=") return x <= y;
    if (o == ">=") return x >= y;
  }
  const double x = ia ? static_cast<double>(*ia) : std::get<double>(a);
  const double y = ib ? static_cast<double>(*ib) : std::get<double>(b);
  if (o == "+") return x + y;
  if (o == "-") return x - y;
  if (o == "*") return x * y;
  if (o == "/") {
    if (y == 0) throw ExprError("division by zero", offset);
    return x / y;
  }
  if (o == "//" || o == "%") {
    if (y == 0) throw ExprError("division by zero", offset);
    const auto [quotient, remainder] = float_divmod(x, y);
    return o == "//" ? quotient : remainder;
  }
  if (o == "<") return x < y;
  if (o == ">") return x > y;
  if (o == "<=") return x <= y;
  return x >= y;
}

int function_arity(std::string_view name) {
  if (name == "round" || name == "floor" || name == "ceil" || name == "sqrt") return 1;
  if (name == "min" || name == "max") return 2;
  return 0;
}

Scalar function(std::string_view name, std::size_t offset, const Scalar& v) {
  const auto* i = std::get_if<std::int64_t>(&v);
  const auto* r = std::get_if<double>(&v);
  if (!i && !r) throw ExprError(std::string(name) + "() needs a number, found " + describe(v), offset);
  if (name == "sqrt") {  // math.sqrt: a real
    const double x = i ? static_cast<double>(*i) : *r;
    if (x < 0) throw ExprError("sqrt() of a negative number, " + describe(v), offset);
    return std::sqrt(x);
  }
  if (i) return v;
  const double x = name == "floor" ? std::floor(*r) : name == "ceil" ? std::ceil(*r) : std::nearbyint(*r);
  // 2^63 is the first double above INT64_MAX; NaN fails both comparisons.
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
    throw ExprError(std::string(name) + "(" + describe(v) + ") is not a 64-bit integer", offset);
  return static_cast<std::int64_t>(x);
}

Scalar negate(const Scalar& v, std::size_t offset) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return checked_sub(0, *i);
  if (auto* r = std::get_if<double>(&v)) return -*r;
  throw ExprError("'-' needs a number, found " + describe(v), offset);
}

}  // namespace nnmem::expr
