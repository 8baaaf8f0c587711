// A compiled `$expression` (expression.hpp's Program) run against a block instance's variables:
// what compile() recorded, in the order evaluate() would have computed it while parsing.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "expression.hpp"
#include "expression_ops.hpp"

namespace nnmem::expr {

Scalar evaluate(const Program& program, const Lookup& lookup) {
  // The operations are in the order Evaluate meets them: each one's operands are the values
  // made last and not yet used (a conditional's test stays until its Choose). So a stack holds
  // the values, as deep as the expression nests; one value an operation took 370 MB for an
  // expression reading a variable 4.6 million times.
  return overflow_as_expr_error([&] {
    std::vector<Scalar> stack;
    std::vector<int> made;  // the operation that made each value on the stack
    const auto top = [&](int k) -> Scalar& {
      if (made.empty() || made.back() != k) throw std::logic_error("a compiled expression's operand is not the value made last");
      return stack.back();
    };
    const auto pop = [&](int k) {
      Scalar v = std::move(top(k));
      stack.pop_back();
      made.pop_back();
      return v;
    };
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Operation& op = program.ops[i];
      Scalar v;
      switch (op.kind) {
        case Operation::Kind::Literal: v = program.literal(op); break;
        case Operation::Kind::Variable: {
          const std::string& name = program.name(op);
          auto found = lookup(name);
          if (!found) throw ExprError("unknown variable '" + name + "'", op.offset, name);
          v = std::move(*found);
          break;
        }
        case Operation::Kind::Condition: (void)as_bool(top(op.a), op.offset); continue;  // the test stays for Choose
        case Operation::Kind::Choose: {
          Scalar b = pop(op.b), a = pop(op.a);
          v = std::get<bool>(pop(op.c)) ? std::move(a) : std::move(b);
          break;
        }
        case Operation::Kind::Negate: v = negate(pop(op.a), op.offset); break;
        case Operation::Kind::Not: v = !as_bool(pop(op.a), op.offset); break;
        case Operation::Kind::Binary: {
          const Scalar b = pop(op.b), a = pop(op.a);
          v = binary(program.name(op), op.offset, a, b);
          break;
        }
        case Operation::Kind::Function: v = function(program.name(op), op.offset, pop(op.a)); break;
      }
      stack.push_back(std::move(v));
      made.push_back(static_cast<int>(i));
    }
    if (stack.size() != 1) throw std::logic_error("a compiled expression leaves " + std::to_string(stack.size()) + " values");
    return std::move(stack.back());
  });
}

}  // namespace nnmem::expr
