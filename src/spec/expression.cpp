#include "expression.hpp"
#include "expression_ops.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnmem/checked.hpp"

namespace nnmem::expr {

namespace {

enum class Tok { Int, Real, Ident, String, Op, End };

struct Token {
  Tok kind;
  std::string_view text;  // in the expression's text, which outlives the parse
  std::size_t offset;
};

// Reads an expression's tokens one at a time: a parser needs only the next one. A 14 MB
// expression's tokens, all read first, took 670 MB. A token is a view of the text: a string
// per token, and each operator compared with the seven of two characters, were most of the
// time such an expression took to read.
class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s), current_(lex()) {}
  const Token& peek() const { return current_; }
  Token next() {  // the end stays put
    if (current_.kind == Tok::End) return current_;
    Token t = lex();
    std::swap(t, current_);
    return t;
  }

 private:
  Token lex() {
    const std::string_view s = s_;
    std::size_t& i = i_;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) return {Tok::End, "", s.size()};
    const char c = s[i];
    const std::size_t start = i;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      bool real = false;
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                              s[i] == 'e' || s[i] == 'E' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) {
        real = real || !std::isdigit(static_cast<unsigned char>(s[i]));
        ++i;
      }
      return {real ? Tok::Real : Tok::Int, s.substr(start, i - start), start};
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
        (c == '$' && i + 1 < s.size() && (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_'))) {
      // `$name` inside an expression is `name`, as at its start: `$na * (5 + $nc)`.
      const std::size_t name = c == '$' ? ++i : i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      return {Tok::Ident, s.substr(name, i - name), start};
    }
    if (c == '\'' || c == '"') {
      const std::size_t close = s.find(c, i + 1);
      if (close == std::string::npos) throw ExprError("unterminated string", start);
      i = close + 1;
      return {Tok::String, s.substr(start + 1, close - start - 1), start};
    }
    std::size_t length = 1;
    if (i + 1 < s.size()) {
      const char d = s[i + 1];
      if ((d == '=' && (c == '=' || c == '!' || c == '<' || c == '>')) || (c == d && (c == '&' || c == '|' || c == '/')))
        length = 2;  // == != <= >= && || //
    }
    if (length == 1 && std::string_view("+-*/%()<>!?:,").find(c) == std::string_view::npos)
      throw ExprError(std::string("unexpected character '") + c + "'", start);
    i += length;
    return {Tok::Op, s.substr(start, length), start};
  }

  const std::string& s_;
  std::size_t i_ = 0;
  Token current_;
};

// A malformed token anywhere in `text` is the error reported, before any error of the parser's:
// reads every token, keeping none.
void check_tokens(const std::string& text) {
  Lexer lexer(text);
  while (lexer.peek().kind != Tok::End) lexer.next();
}

// For messages: "the end of the expression", "')'", "the string 'same'".
std::string spell(const Token& t) {
  switch (t.kind) {
    case Tok::End: return "the end of the expression";
    case Tok::String: return "the string '" + std::string(t.text) + "'";
    default: return "'" + std::string(t.text) + "'";
  }
}

// A Pratt parser that evaluates as it parses. It runs the first time an expression is met,
// and whenever compiling it failed: its errors, in the order it meets them, are the ones
// reported.
//
// The same parser also compiles: what it does with each value is its Sink's — Evaluate computes
// it at once, Compile records an operation of a Program to run later.
template <class Sink>
class Parser {
 public:
  using V = typename Sink::Value;
  Parser(const std::string& text, Sink& sink) : lex_(text), sink_(sink) {}

  V parse_all() {
    if (peek().kind == Tok::End) throw ExprError("the expression is empty", 0);
    V v = parse(0, "");
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

  const Token& peek() const { return lex_.peek(); }
  Token next() { return lex_.next(); }  // End stays put
  bool accept(const char* op) {
    if (peek().kind == Tok::Op && peek().text == op) { next(); return true; }
    return false;
  }

  static int precedence(std::string_view op) {
    if (op == "?") return 1;
    if (op == "||") return 2;
    if (op == "&&") return 3;
    if (op == "==" || op == "!=") return 4;
    if (op == "<" || op == ">" || op == "<=" || op == ">=") return 5;
    if (op == "+" || op == "-") return 6;
    if (op == "*" || op == "/" || op == "//" || op == "%") return 7;
    return 0;
  }

  // `after` is what precedes the operand ("*", "("), for "expected a value after '*'"; a view,
  // quoted only for the message.
  V parse(int min_prec, std::string_view after) {
    const Depth depth(*this);
    V left = parse_unary(after);
    while (peek().kind == Tok::Op) {
      const Token op = peek();
      const int prec = precedence(op.text);
      if (prec == 0 || prec <= min_prec) break;
      next();
      if (op.text == "?") {
        sink_.condition(left, op.offset);
        V a = parse(0, "?");
        if (!accept(":"))
          throw ExprError("expected ':' in 'a ? b : c', found " + spell(peek()), peek().offset);
        V b = parse(0, ":");
        left = sink_.choose(std::move(left), op.offset, std::move(a), std::move(b));
        continue;
      }
      V right = parse(prec, op.text);
      left = sink_.binary(op.text, op.offset, std::move(left), std::move(right));
    }
    return left;
  }

  V parse_unary(std::string_view after) {
    const Token t = next();
    switch (t.kind) {
      case Tok::Int: {  // digits only
        std::int64_t v = 0;
        if (std::from_chars(t.text.data(), t.text.data() + t.text.size(), v).ec == std::errc::result_out_of_range)
          throw ExprError("integer " + std::string(t.text) + " does not fit in 64 bits", t.offset);
        return sink_.literal(v);
      }
      case Tok::Real: {
        const std::string text(t.text);
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (*end != '\0') throw ExprError("malformed number '" + text + "'", t.offset);
        return sink_.literal(v);
      }
      case Tok::String: return sink_.literal(std::string(t.text));
      case Tok::Ident: {
        if (t.text == "true") return sink_.literal(true);
        if (t.text == "false") return sink_.literal(false);
        if (accept("(")) return call(t);
        return sink_.variable(t.text, t.offset);
      }
      case Tok::Op:
        if (t.text == "(") {
          V v = parse(0, "(");
          if (!accept(")")) throw ExprError("expected ')', found " + spell(peek()), peek().offset);
          return v;
        }
        if (t.text == "-") return sink_.negate(parse(8, "-"), t.offset);
        if (t.text == "!") return sink_.logical_not(parse(8, "!"), t.offset);
        [[fallthrough]];
      case Tok::End:
        break;
    }
    throw ExprError("expected a value" + (after.empty() ? std::string() : " after '" + std::string(after) + "'") + ", found " +
                        spell(t),
                    t.offset);
  }

  // `name(` has been read: Python's built-ins of one number (round, floor, ceil: to an integer;
  // sqrt) or of two (min, max).
  V call(const Token& name) {
    const int arity = function_arity(name.text);
    const std::string fn(name.text);
    if (arity == 0) throw ExprError("unknown function '" + fn + "' (known: round, floor, ceil, sqrt, min, max)", name.offset);
    const std::string after = fn + "(";
    V a = parse(0, after);
    if (arity == 2) {
      if (!accept(",")) throw ExprError(fn + "() takes two values: expected ',', found " + spell(peek()), peek().offset);
      V b = parse(0, ",");
      if (!accept(")")) throw ExprError("expected ')', found " + spell(peek()), peek().offset);
      return sink_.binary(name.text, name.offset, std::move(a), std::move(b));
    }
    if (!accept(")")) throw ExprError(fn + "() takes one value: expected ')', found " + spell(peek()), peek().offset);
    return sink_.function(name.text, name.offset, std::move(a));
  }

  Lexer lex_;
  Sink& sink_;
  int depth_ = 0;
};

// Computes each value as the parser meets it.
struct Evaluate {
  using Value = Scalar;
  const Lookup& lookup;

  Scalar literal(Scalar v) { return v; }
  Scalar variable(std::string_view text, std::size_t offset) {
    const std::string name(text);
    if (auto v = lookup(name)) return *v;
    throw ExprError("unknown variable '" + name + "'", offset, name);
  }
  void condition(const Scalar& v, std::size_t offset) { (void)as_bool(v, offset); }
  Scalar choose(Scalar cond, std::size_t, Scalar a, Scalar b) { return std::get<bool>(cond) ? std::move(a) : std::move(b); }
  Scalar negate(Scalar v, std::size_t offset) { return expr::negate(v, offset); }
  Scalar logical_not(Scalar v, std::size_t offset) { return !as_bool(v, offset); }
  Scalar binary(std::string_view op, std::size_t offset, Scalar a, Scalar b) { return expr::binary(op, offset, a, b); }
  Scalar function(std::string_view name, std::size_t offset, Scalar v) { return expr::function(name, offset, v); }
};

// Records each operation as the parser meets it, in the order Evaluate would compute it: the
// operands before what uses them (and a conditional's test before its branches).
struct Compile {
  using Value = int;  // the index of the operation that makes it
  Program& p;
  std::unordered_map<std::string, std::uint32_t> name_ids;  // p.names, each once

  int add(Operation::Kind kind, std::size_t offset, int a = -1, int b = -1, int c = -1, std::uint32_t arg = 0) {
    // (An offset is within a spec's text, which the loader caps far below 4 GiB.)
    p.ops.push_back({kind, arg, static_cast<std::uint32_t>(offset), a, b, c});
    return static_cast<int>(p.ops.size()) - 1;
  }
  std::uint32_t name(std::string_view text) {
    const auto [it, fresh] = name_ids.try_emplace(std::string(text), static_cast<std::uint32_t>(p.names.size()));
    if (fresh) p.names.push_back(it->first);
    return it->second;
  }
  const Scalar& value(int op) const { return p.literal(p.ops[static_cast<std::size_t>(op)]); }

  int literal(Scalar v) {
    p.literals.push_back(std::move(v));
    return add(Operation::Kind::Literal, 0, -1, -1, -1, static_cast<std::uint32_t>(p.literals.size() - 1));
  }
  int variable(std::string_view text, std::size_t offset) { return add(Operation::Kind::Variable, offset, -1, -1, -1, name(text)); }
  void condition(int v, std::size_t offset) { add(Operation::Kind::Condition, offset, v); }
  int choose(int cond, std::size_t, int a, int b) { return add(Operation::Kind::Choose, 0, a, b, cond); }
  int negate(int v, std::size_t offset) {
    if (auto folded = fold({v}, [&] { return expr::negate(value(v), offset); })) return *folded;
    return add(Operation::Kind::Negate, offset, v);
  }
  int logical_not(int v, std::size_t offset) {
    if (auto folded = fold({v}, [&] { return Scalar(!as_bool(value(v), offset)); })) return *folded;
    return add(Operation::Kind::Not, offset, v);
  }
  int binary(std::string_view op, std::size_t offset, int a, int b) {
    if (auto folded = fold({a, b}, [&] { return expr::binary(op, offset, value(a), value(b)); })) return *folded;
    return add(Operation::Kind::Binary, offset, a, b, -1, name(op));
  }
  int function(std::string_view fn, std::size_t offset, int v) {
    if (auto folded = fold({v}, [&] { return expr::function(fn, offset, value(v)); })) return *folded;
    return add(Operation::Kind::Function, offset, v, -1, -1, name(fn));
  }

  // Constant folding: an operation whose operands are the last operations, all literals,
  // becomes the literal it computes — unless computing it fails, when the operation
  // stays, to fail where evaluate() would. A repeated block's constant expression is then
  // computed once. The operands' literals are the last ones too, and go with them.
  template <class F>
  std::optional<int> fold(std::initializer_list<int> operands, F compute) {
    const std::size_t n = operands.size();
    std::size_t k = p.ops.size() - n;
    for (const int operand : operands)
      if (static_cast<std::size_t>(operand) != k++ || p.ops[static_cast<std::size_t>(operand)].kind != Operation::Kind::Literal)
        return std::nullopt;
    Scalar v;
    try {
      v = compute();
    } catch (const ExprError&) {
      return std::nullopt;
    } catch (const OverflowError&) {
      return std::nullopt;
    }
    p.ops.resize(p.ops.size() - n);
    p.literals.resize(p.literals.size() - n);
    return literal(std::move(v));
  }
};

}  // namespace

Scalar evaluate(const std::string& text, const Lookup& lookup) {
  Evaluate sink{lookup};
  return overflow_as_expr_error([&] {
    check_tokens(text);
    return Parser<Evaluate>(text, sink).parse_all();
  });
}

std::shared_ptr<const Program> compile(const std::string& text) {
  auto program = std::make_shared<Program>();
  Compile sink{*program, {}};
  try {
    check_tokens(text);
    Parser<Compile>(text, sink).parse_all();
  } catch (const ExprError&) {
    return nullptr;  // evaluate(text, …) reports it, in the order it meets its errors
  }
  return program;
}

}  // namespace nnmem::expr
