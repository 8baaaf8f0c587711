#include "expression.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>
#include <vector>

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

enum class Tok { Int, Real, Ident, String, Op, End };

struct Token {
  Tok kind;
  std::string text;
  std::size_t offset;
};

std::vector<Token> tokenize(const std::string& s) {
  static const char* const two_char_ops[] = {"==", "!=", "<=", ">=", "&&", "||", "//"};
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    const std::size_t start = i;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      bool real = false;
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                              s[i] == 'e' || s[i] == 'E' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
        real = real || !std::isdigit(static_cast<unsigned char>(s[i]));
        ++i;
      }
      out.push_back({real ? Tok::Real : Tok::Int, s.substr(start, i - start), start});
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
               (c == '$' && i + 1 < s.size() && (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_'))) {
      // `$name` inside an expression is `name`, as at its start: `$na * (5 + $nc)`.
      const std::size_t name = c == '$' ? ++i : i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      out.push_back({Tok::Ident, s.substr(name, i - name), start});
    } else if (c == '\'' || c == '"') {
      const std::size_t close = s.find(c, i + 1);
      if (close == std::string::npos) throw ExprError("unterminated string", start);
      out.push_back({Tok::String, s.substr(i + 1, close - i - 1), start});
      i = close + 1;
    } else {
      std::string op(1, c);
      for (const char* two : two_char_ops)
        if (s.compare(i, 2, two) == 0) op = two;
      if (op.size() == 1 && std::string("+-*/%()<>!?:").find(c) == std::string::npos)
        throw ExprError(std::string("unexpected character '") + c + "'", start);
      out.push_back({Tok::Op, op, start});
      i += op.size();
    }
  }
  out.push_back({Tok::End, "", s.size()});
  return out;
}

// For messages: "the end of the expression", "')'", "the string 'same'".
std::string spell(const Token& t) {
  switch (t.kind) {
    case Tok::End: return "the end of the expression";
    case Tok::String: return "the string '" + t.text + "'";
    default: return "'" + t.text + "'";
  }
}

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

// A Pratt parser that evaluates as it parses (expressions are tiny and evaluated once).
class Parser {
 public:
  Parser(std::vector<Token> tokens, const Lookup& lookup) : toks_(std::move(tokens)), lookup_(lookup) {}

  Scalar parse_all() {
    if (peek().kind == Tok::End) throw ExprError("the expression is empty", 0);
    Scalar v = parse(0, "");
    if (peek().kind != Tok::End)
      throw ExprError("expected an operator or the end of the expression, found " + spell(peek()), peek().offset);
    return v;
  }

 private:
  // Counts the parser's recursion; the limit is checked on the way in.
  class Depth {
   public:
    explicit Depth(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxExpressionDepth)
        throw ExprError("the expression nests more than " + std::to_string(kMaxExpressionDepth) + " levels deep",
                        p_.peek().offset);
    }
    ~Depth() { --p_.depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;

   private:
    Parser& p_;
  };

  const Token& peek() const { return toks_[pos_]; }
  const Token& next() { return pos_ + 1 < toks_.size() ? toks_[pos_++] : toks_.back(); }  // End stays put
  bool accept(const char* op) {
    if (peek().kind == Tok::Op && peek().text == op) { ++pos_; return true; }
    return false;
  }

  static int precedence(const std::string& op) {
    if (op == "?") return 1;
    if (op == "||") return 2;
    if (op == "&&") return 3;
    if (op == "==" || op == "!=") return 4;
    if (op == "<" || op == ">" || op == "<=" || op == ">=") return 5;
    if (op == "+" || op == "-") return 6;
    if (op == "*" || op == "/" || op == "//" || op == "%") return 7;
    return 0;
  }

  // `after` names what precedes the operand ("'*'", "'('"), for "expected a value after …".
  Scalar parse(int min_prec, const std::string& after) {
    const Depth depth(*this);
    Scalar left = parse_unary(after);
    while (peek().kind == Tok::Op) {
      const Token op = peek();
      const int prec = precedence(op.text);
      if (prec == 0 || prec <= min_prec) break;
      ++pos_;
      if (op.text == "?") {
        const bool cond = as_bool(left, op.offset);
        Scalar a = parse(0, "'?'");
        if (!accept(":"))
          throw ExprError("expected ':' in 'a ? b : c', found " + spell(peek()), peek().offset);
        Scalar b = parse(0, "':'");
        left = cond ? std::move(a) : std::move(b);
        continue;
      }
      Scalar right = parse(prec, "'" + op.text + "'");
      left = binary(op, left, right);
    }
    return left;
  }

  Scalar parse_unary(const std::string& after) {
    const Token t = next();
    switch (t.kind) {
      case Tok::Int: {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(t.text.c_str(), &end, 10);
        if (errno == ERANGE) throw ExprError("integer " + t.text + " does not fit in 64 bits", t.offset);
        return static_cast<std::int64_t>(v);
      }
      case Tok::Real: {
        char* end = nullptr;
        const double v = std::strtod(t.text.c_str(), &end);
        if (*end != '\0') throw ExprError("malformed number '" + t.text + "'", t.offset);
        return v;
      }
      case Tok::String: return t.text;
      case Tok::Ident: {
        if (t.text == "true") return true;
        if (t.text == "false") return false;
        if (auto v = lookup_(t.text)) return *v;
        throw ExprError("unknown variable '" + t.text + "'", t.offset, t.text);
      }
      case Tok::Op:
        if (t.text == "(") {
          Scalar v = parse(0, "'('");
          if (!accept(")")) throw ExprError("expected ')', found " + spell(peek()), peek().offset);
          return v;
        }
        if (t.text == "-") {
          Scalar v = parse(8, "'-'");
          if (auto* i = std::get_if<std::int64_t>(&v)) return checked_sub(0, *i);
          if (auto* r = std::get_if<double>(&v)) return -*r;
          throw ExprError("'-' needs a number, found " + describe(v), t.offset);
        }
        if (t.text == "!") return !as_bool(parse(8, "'!'"), t.offset);
        [[fallthrough]];
      case Tok::End:
        break;
    }
    throw ExprError("expected a value" + (after.empty() ? std::string() : " after " + after) + ", found " +
                        spell(t),
                    t.offset);
  }

  static bool as_bool(const Scalar& v, std::size_t offset) {
    if (auto* b = std::get_if<bool>(&v)) return *b;
    throw ExprError("expected true or false, found " + describe(v), offset);
  }

  static Scalar binary(const Token& op, const Scalar& a, const Scalar& b) {
    const std::string& o = op.text;
    if (o == "&&") return as_bool(a, op.offset) && as_bool(b, op.offset);
    if (o == "||") return as_bool(a, op.offset) || as_bool(b, op.offset);
    if (o == "==") return equal(a, b);
    if (o == "!=") return !equal(a, b);
    const auto* ia = std::get_if<std::int64_t>(&a);
    const auto* ib = std::get_if<std::int64_t>(&b);
    const bool numeric = (ia || std::holds_alternative<double>(a)) && (ib || std::holds_alternative<double>(b));
    if (!numeric)
      throw ExprError("'" + o + "' needs numbers, found " + describe(a) + " and " + describe(b), op.offset);
    if (ia && ib) {
      const std::int64_t x = *ia, y = *ib;
      if (o == "+") return checked_add(x, y);
      if (o == "-") return checked_sub(x, y);
      if (o == "*") return checked_mul(x, y);
      if (o == "/" || o == "//" || o == "%") {
        if (y == 0) throw ExprError("division by zero", op.offset);
        // Python's divmod (and `/` on integers floors too, since sizes are integers): the
        // quotient floors, the remainder takes the divisor's sign. Of INT64_MIN and -1 only the
        // quotient, 2^63, does not fit; the remainder is 0 (and C's `%` would be undefined).
        if (y == -1) {
          if (o == "%") return std::int64_t{0};
          if (x == INT64_MIN) throw_overflow(o.c_str(), x, y);
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
      if (y == 0) throw ExprError("division by zero", op.offset);
      return x / y;
    }
    if (o == "//" || o == "%") {
      if (y == 0) throw ExprError("division by zero", op.offset);
      const auto [quotient, remainder] = float_divmod(x, y);
      return o == "//" ? quotient : remainder;
    }
    if (o == "<") return x < y;
    if (o == ">") return x > y;
    if (o == "<=") return x <= y;
    return x >= y;
  }

  static bool equal(const Scalar& a, const Scalar& b) {
    const auto* ia = std::get_if<std::int64_t>(&a);
    const auto* ib = std::get_if<std::int64_t>(&b);
    const auto* ra = std::get_if<double>(&a);
    const auto* rb = std::get_if<double>(&b);
    if ((ia || ra) && (ib || rb))
      return (ia ? static_cast<double>(*ia) : *ra) == (ib ? static_cast<double>(*ib) : *rb) &&
             (!ia || !ib || *ia == *ib);
    return a == b;
  }

  std::vector<Token> toks_;
  const Lookup& lookup_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Scalar evaluate(const std::string& text, const Lookup& lookup) {
  try {
    return Parser(tokenize(text), lookup).parse_all();
  } catch (const OverflowError& e) {
    throw ExprError("integer overflow: " + e.operation() + " does not fit in 64 bits", 0);
  }
}

}  // namespace nnmem::expr
