// The operations of `$expressions` on values, shared by evaluating while parsing and running a
// compiled Program (expression.cpp): Python's arithmetic on checked 64-bit integers and doubles,
// comparisons, and the checks that name what a value should have been.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "expression.hpp"
#include "nnmem/checked.hpp"

namespace nnmem::expr {

/// The value as a condition; ExprError at `offset` unless it is true or false.
bool as_bool(const Scalar& v, std::size_t offset);
/// `a op b` for the binary operators (+ - * / // % == != < > <= >= && ||).
Scalar binary(std::string_view op, std::size_t offset, const Scalar& a, const Scalar& b);
/// How many values the built-in function `name` takes (round, floor, ceil, sqrt: 1; min,
/// max: 2); 0 when there is no such function.
int function_arity(std::string_view name);
/// round(v), floor(v) or ceil(v), as Python's: an integer (round halves to even); sqrt(v), a real.
Scalar function(std::string_view name, std::size_t offset, const Scalar& v);
/// `-v`.
Scalar negate(const Scalar& v, std::size_t offset);

/// f(), an integer overflow in it reported as ExprError ("integer overflow: … does not fit").
template <class F>
auto overflow_as_expr_error(F f) {
  try {
    return f();
  } catch (const OverflowError& e) {
    throw ExprError("integer overflow: " + e.operation() + " does not fit in 64 bits", 0);
  }
}

}  // namespace nnmem::expr
