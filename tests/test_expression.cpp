// `$expressions` as a spec uses them: arithmetic, comparisons, variables (the spec's, --set
// overrides, block parameters, `index`), and the errors — each naming the layer and attribute,
// quoting the expression and saying what was expected and found.
#include <functional>

#include "../src/spec/expression.hpp"
#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// The value of `out_features` in a one-Linear spec whose variables are `variables` (YAML lines).
Value out_features(const std::string& expression, const std::string& variables = "", const LoadOptions& options = {}) {
  const std::string yaml = (variables.empty() ? "" : "variables:\n" + variables) +
                           "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: " + expression + "}\n";
  const ModelSpec spec = parse_spec(yaml, "test.yaml", options);
  return spec.layers.at(0).find_attr("out_features")->value;
}

std::int64_t int_of(const std::string& expression, const std::string& variables = "") {
  const Value v = out_features(expression, variables);
  REQUIRE(v.kind == Value::Kind::Int);
  return v.integer;
}


std::string expression_error(const std::string& expression, const std::string& variables = "") {
  return load_error((variables.empty() ? "" : "variables:\n" + variables) +
                    "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: " + expression + "}\n");
}

}  // namespace

TEST_CASE("arithmetic follows the usual precedence, with floor division on integers") {
  CHECK(int_of("$2 + 3 * 4") == 14);
  CHECK(int_of("$(2 + 3) * 4") == 20);
  CHECK(int_of("$7 // 2") == 3);
  CHECK(int_of("$7 / 2") == 3);       // sizes are integers: `/` floors too
  CHECK(int_of("\"$-7 // 2\"") == -4);  // Python's floor, not C's truncation
  CHECK(int_of("$7 % 3") == 1);
  CHECK(int_of("$- 3 + 10") == 7);
  CHECK(int_of("$2 * -3 + 10") == 4);
  const Value real = out_features("$7.0 / 2");
  CHECK(real.kind == Value::Kind::Float);
  CHECK(real.real == 3.5);
}

TEST_CASE("// and % are Python's: the quotient floors, the remainder takes the divisor's sign") {
  // Python 3: -7 % 3 == 2, 7 % -3 == -2, -7 % -3 == -1, -7 // 2 == -4, 7 // -2 == -4
  CHECK(int_of("\"$-7 % 3\"") == 2);
  CHECK(int_of("\"$7 % -3\"") == -2);
  CHECK(int_of("\"$-7 % -3\"") == -1);
  CHECK(int_of("\"$-6 % 3\"") == 0);
  CHECK(int_of("\"$7 // -2\"") == -4);
  CHECK(int_of("\"$-7 / 2\"") == -4);
  // (-2**63) % -1 == 0 in Python; only the quotient (-2**63) // -1 = 2**63 does not fit
  CHECK(int_of("\"$(-9223372036854775807 - 1) % -1\"") == 0);
  CHECK(int_of("\"$(-9223372036854775807 - 1) % 2\"") == 0);
  CHECK(int_of("\"$(-9223372036854775807 - 1) // 1\"") == INT64_MIN);
  CHECK(expression_error("\"$(-9223372036854775807 - 1) // -1\"") ==
        "test.yaml:3:44: error: Linear 'fc': out_features: in '$(-9223372036854775807 - 1) // -1': integer overflow: "
        "-9223372036854775808 // -1 does not fit in 64 bits");
  CHECK(expression_error("\"$(-9223372036854775807 - 1) / -1\"").find("-9223372036854775808 / -1 does not fit") != std::string::npos);
  CHECK(expression_error("\"$7 % 0\"").find("division by zero") != std::string::npos);
  // floats too: -7.0 % 3 == 2.0, 7.5 % -2 == -0.5, -7.5 // 2 == -4.0, and 1 // 0.1 == 9.0
  // (Python floors the exact quotient of the two doubles, not the rounded 1 / 0.1 == 10.0)
  const auto real_of = [](const std::string& e) {
    const Value v = out_features(e);
    REQUIRE(v.kind == Value::Kind::Float);
    return v.real;
  };
  CHECK(real_of("\"$-7.0 % 3\"") == 2.0);
  CHECK(real_of("\"$7.5 % -2\"") == -0.5);
  CHECK(real_of("\"$-7.5 // 2\"") == -4.0);
  CHECK(real_of("\"$1 // 0.1\"") == 9.0);
  CHECK(real_of("\"$1 % 0.1\"") == doctest::Approx(0.09999999999999995));
}

TEST_CASE("round, floor, ceil, sqrt, min and max are Python's built-ins; compiled in a repeat too") {
  CHECK(int_of("$round(3 * 0.33)") == 1);          // Ultralytics' depth scaling: max(round(n * d), 1)
  CHECK(int_of("$round(2.5)") == 2);               // halves to even, as Python's round
  CHECK(int_of("$round(3.5)") == 4);
  CHECK(int_of("\"$round(-2.5)\"") == -2);
  CHECK(int_of("$floor(2.7) + ceil(2.1)") == 5);
  CHECK(int_of("\"$floor(-0.5)\"") == -1);
  CHECK(int_of("$ceil(7)") == 7);                  // an integer stays itself
  CHECK(int_of("\"$max(round(d * 3), 1)\"", "  d: 0.1\n") == 1);
  CHECK(int_of("\"$min(c, m) * 2\"", "  c: 1024\n  m: 512\n") == 1024);
  CHECK(int_of("\"$ceil(min(c, m) * w / 8) * 8\"", "  c: 1024\n  m: 768\n  w: 0.75\n") == 576);
  const std::string repeated =
      "inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, repeat: 3, out_features: \"$max(index * 4, 5)\"}\n";
  const ModelSpec spec = parse_spec(repeated, "test.yaml");
  CHECK(spec.layers.at(0).find_attr("out_features")->value.integer == 5);
  CHECK(spec.layers.at(2).find_attr("out_features")->value.integer == 8);
  CHECK(expression_error("$cbrt(4)").find("unknown function 'cbrt'") != std::string::npos);
  const Value scale = out_features("$1 / sqrt(64)");
  CHECK(scale.kind == Value::Kind::Float);
  CHECK(scale.real == 0.125);
  CHECK(expression_error("\"$sqrt(-1)\"").find("sqrt() of a negative number") != std::string::npos);
  CHECK(expression_error("\"$round(1, 2)\"").find("round() takes one value: expected ')', found ','") != std::string::npos);
  CHECK(expression_error("$max(1)").find("max() takes two values: expected ','") != std::string::npos);
  CHECK(expression_error("\"$round('a')\"").find("round() needs a number, found the string 'a'") != std::string::npos);
  CHECK(expression_error("$floor(1e300)").find("is not a 64-bit integer") != std::string::npos);
  CHECK(expression_error("\"$max(1, 'a')\"").find("'max' needs numbers") != std::string::npos);
}

TEST_CASE("comparisons, booleans, strings and the conditional") {
  CHECK(int_of("\"$w > 4 && !(w == 6) ? 1 : 2\"", "  w: 8\n") == 1);
  CHECK(int_of("\"$w > 4 && !(w == 8) ? 1 : 2\"", "  w: 8\n") == 2);
  CHECK(int_of("\"$mode == 'same' ? 3 : 5\"", "  mode: same\n") == 3);
  CHECK(int_of("\"$false || w <= 8 ? 1 : 0\"", "  w: 8\n") == 1);
  CHECK(int_of("\"$1 == 1.0 ? 1 : 0\"") == 1);  // numbers compare by value
}

TEST_CASE("variables: each may use the ones above it; --set overrides them, by value or by expression") {
  const std::string vars = "  width: 64\n  hidden: $width * 4\n";
  CHECK(int_of("$hidden", vars) == 256);
  LoadOptions set;
  set.overrides = {{"width", "32"}};
  CHECK(out_features("$hidden", vars, set).integer == 128);
  set.overrides = {{"width", "$16 * 3"}};
  CHECK(out_features("$hidden", vars, set).integer == 192);
  set.overrides = {{"hidden", "10"}};
  CHECK(out_features("$hidden", vars, set).integer == 10);
}

TEST_CASE("`$$` is a literal dollar; a quoted `$` is still an expression; `$name` alone keeps a list") {
  const ModelSpec spec = parse_spec(
      "inputs: {x: [3, 16, 16]}\nblocks:\n  B:\n    params: {k: [3, 5]}\n    layers:\n"
      "      - {name: c, type: Conv2d, out_channels: \"$2 * 4\", kernel_size: $k, padding_mode: $$zeros}\n"
      "layers:\n  - {name: b, block: B}\n",
      "test.yaml");
  const LayerSpec& c = spec.layers.at(0);
  CHECK(c.name == "b.c");
  CHECK(c.find_attr("out_channels")->value.integer == 8);
  CHECK(c.find_attr("kernel_size")->value.str() == "[3, 5]");
  CHECK(c.find_attr("padding_mode")->value.kind == Value::Kind::String);
  CHECK(c.find_attr("padding_mode")->value.text == "$zeros");
}

TEST_CASE("expression errors name the layer and the attribute, and point at the value") {
  CHECK(expression_error("$widht", "  width: 8\n") ==
        "test.yaml:5:44: error: Linear 'fc': out_features: in '$widht': unknown variable 'widht' (did you mean "
        "'width'?)");
  CHECK(expression_error("$8 // 0") == "test.yaml:3:44: error: Linear 'fc': out_features: in '$8 // 0': division by zero");
  CHECK(expression_error("$w * 2", "  w: wide\n") ==
        "test.yaml:5:44: error: Linear 'fc': out_features: in '$w * 2': '*' needs numbers, found the string 'wide' "
        "and the integer 2");
  CHECK(expression_error("$4294967296 * 4294967296") ==
        "test.yaml:3:44: error: Linear 'fc': out_features: in '$4294967296 * 4294967296': integer overflow: "
        "4294967296 * 4294967296 does not fit in 64 bits");
}

TEST_CASE("syntax errors say what was expected and what was found") {
  const auto message = [](const std::string& expression) {
    const std::string e = expression_error(expression);
    return e.substr(e.rfind("': ") + 3);
  };
  CHECK(message("\"$8 *\"") == "expected a value after '*', found the end of the expression");
  CHECK(message("\"$(8 + 1\"") == "expected ')', found the end of the expression");
  CHECK(message("\"$8 8\"") == "expected an operator or the end of the expression, found '8'");
  CHECK(message("\"$8 + )\"") == "expected a value after '+', found ')'");
  CHECK(message("\"$true ? 1 2\"") == "expected ':' in 'a ? b : c', found '2'");
  CHECK(message("\"$'open\"") == "unterminated string");
  CHECK(message("\"$8 @ 2\"") == "unexpected character '@'");
  CHECK(expression_error("$") == "test.yaml:3:44: error: Linear 'fc': out_features: in '$': the expression is empty");
}

TEST_CASE("nesting is bounded, so no expression can exhaust the stack") {
  const auto nested = [](int depth) { return std::string("$").append(depth, '(').append("1").append(depth, ')'); };
  CHECK(int_of(nested(400)) == 1);
  // Too long to quote: the message names the layer and attribute only.
  CHECK(expression_error(nested(100000)) ==
        "test.yaml:3:44: error: Linear 'fc': out_features: the expression nests more than 500 levels deep");
  CHECK(expression_error("$" + std::string(2000, '-') + "1").find("nests more than 500 levels") != std::string::npos);
}

TEST_CASE("a variable defined below the one using it is named as such") {
  CHECK(load_error("variables:\n  hidden: $width * 4\n  width: 128\ninputs: {x: [8]}\nlayers:\n  - {type: ReLU}\n") ==
        "test.yaml:2:11: error: in '$width * 4': variable 'width' is defined later (line 3); a variable can only use "
        "the variables above it");
}

TEST_CASE("lists and mappings cannot take part in arithmetic") {
  const std::string spec =
      "inputs: {x: [3, 8, 8]}\nblocks:\n  B:\n    params: [k]\n    layers:\n"
      "      - {name: c, type: Conv2d, out_channels: 4, kernel_size: $k * 2}\n"
      "layers:\n  - {name: b, block: B, k: ARG}\n";
  const auto with = [&](const std::string& arg) { return load_error(spec.substr(0, spec.find("ARG")) + arg + "}\n"); };
  CHECK(with("[3, 3]").find("Conv2d 'b.c': kernel_size: in '$k * 2': 'k' is a list; use it alone, as $k") !=
        std::string::npos);
  CHECK(with("{a: 1}").find("'k' is a mapping, which arithmetic cannot use") != std::string::npos);
}

TEST_CASE("--set: unknown and repeated names are errors") {
  const std::string yaml = "variables:\n  width: 8\ninputs: {x: [8]}\nlayers:\n  - {type: Linear, out_features: $width}\n";
  LoadOptions set;
  set.overrides = {{"widht", "4"}};
  CHECK(load_error(yaml, set) ==
        "test.yaml:1:1: error: --set widht=4: the spec has no variable 'widht' (did you mean 'width'?)");
  set.overrides = {{"width", "4"}, {"width", "16"}};
  CHECK(load_error(yaml, set) ==
        "test.yaml:1:1: error: --set width=16: 'width' is already set by --set width=4; give each variable once");
}

TEST_CASE("a NaN cannot pass a range check") {
  const std::string e = error_from("inputs: {x: [8]}\nlayers:\n  - {name: fc, type: Linear, out_features: 8}\n"
                                   "  - {name: drop, type: Dropout, p: $1e308 * 10 - 1e308 * 10}\n");
  CHECK(e == "test.yaml:4:36: error: Dropout 'drop': p must be between 0 and 1, found nan");
}

TEST_CASE("a compiled expression gives what evaluating its text gives: values and errors, on random expressions") {
  // Random token strings from a small vocabulary: mostly well-formed, often failing (unknown
  // variables, wrong types, division by zero, overflow), sometimes not parsing at all.
  const std::vector<std::string> atoms = {"1", "0", "-3", "7", "2.5", "9223372036854775807", "x", "s", "b", "q", "'t'", "true", "false"};
  const std::vector<std::string> ops = {"+", "-", "*", "/", "//", "%", "==", "!=", "<", ">=", "&&", "||"};
  const nnmem::expr::Lookup lookup = [](const std::string& name) -> std::optional<nnmem::expr::Scalar> {
    if (name == "x") return std::int64_t{4};
    if (name == "s") return std::string("same");
    if (name == "b") return true;
    return std::nullopt;
  };
  std::uint64_t state = 12345;
  const auto rnd = [&](std::size_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  };
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    const std::size_t pick = depth > 3 ? 0 : rnd(7);
    if (pick <= 2) return atoms[rnd(atoms.size())];
    if (pick == 3) return "(" + gen(depth + 1) + ")";
    if (pick == 4) return (rnd(2) ? "-" : "!") + gen(depth + 1);
    if (pick == 5) return gen(depth + 1) + " ? " + gen(depth + 1) + " : " + gen(depth + 1);
    return gen(depth + 1) + " " + ops[rnd(ops.size())] + " " + gen(depth + 1);
  };
  int compiled = 0, failed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = gen(0);
    if (rnd(10) == 0) text.insert(rnd(text.size() + 1), rnd(2) ? "(" : "+");  // often unparseable
    CAPTURE(text);
    std::string eager, fast;
    try {
      eager = nnmem::expr::describe(nnmem::expr::evaluate(text, lookup));
    } catch (const nnmem::expr::ExprError& e) {
      eager = std::string("error at ") + std::to_string(e.offset()) + ": " + e.what() + " [" + e.unknown_variable() + "]";
    }
    const auto program = nnmem::expr::compile(text);
    if (!program) {
      CHECK(eager.rfind("error", 0) == 0);  // what does not compile does not evaluate either
      continue;
    }
    ++compiled;
    try {
      fast = nnmem::expr::describe(nnmem::expr::evaluate(*program, lookup));
    } catch (const nnmem::expr::ExprError& e) {
      fast = std::string("error at ") + std::to_string(e.offset()) + ": " + e.what() + " [" + e.unknown_variable() + "]";
      ++failed;
    }
    CHECK(fast == eager);
  }
  CHECK(compiled > 10000);
  CHECK(failed > 1000);
}

TEST_CASE("a constant expression is folded when compiled: one operation, however long") {
  std::string text = "256";
  for (int i = 0; i < 5000; ++i) text += " + 0";
  const auto program = nnmem::expr::compile(text);
  REQUIRE(program);
  CHECK(program->ops.size() == 1);
  CHECK(std::get<std::int64_t>(nnmem::expr::evaluate(*program, [](const std::string&) { return std::nullopt; })) == 256);
  // What fails is not folded: it fails when evaluated, where evaluate() would.
  const auto bad = nnmem::expr::compile("1 // 0");
  REQUIRE(bad);
  CHECK(bad->ops.size() == 3);
}

TEST_CASE("a compiled expression is evaluated on a stack as deep as it nests, and its length is bounded") {
  // 200,000 reads of a variable: one value a read would be 200,000 values held at once.
  std::string text = "w";
  for (int i = 0; i < 199999; ++i) text += i % 3 == 0 ? "+w" : i % 3 == 1 ? "*1+w" : "-(w-w)+w";
  const auto program = nnmem::expr::compile(text);
  REQUIRE(program);
  CHECK(program->ops.size() > 400000);
  const auto w = [](const std::string& name) -> std::optional<nnmem::expr::Scalar> {
    if (name == "w") return std::int64_t{3};
    return std::nullopt;
  };
  CHECK(std::get<std::int64_t>(nnmem::expr::evaluate(*program, w)) == 3 * 200000);
  CHECK(nnmem::expr::evaluate(*program, w) == nnmem::expr::evaluate(text, w));
  // Conditionals keep their test on the stack until both branches are made.
  const auto choose = nnmem::expr::compile("w > 2 ? (w < 5 ? w * 10 : 0) : w == 3 ? 1 : 2");
  REQUIRE(choose);
  CHECK(std::get<std::int64_t>(nnmem::expr::evaluate(*choose, w)) == 30);
  // Longer than the limit: refused where it is written, before it is parsed.
  const std::string longest = "$1" + std::string(nnmem::expr::kMaxExpressionLength - 1, ' ');
  CHECK(int_of("\"" + longest + "\"") == 1);
  CHECK(expression_error("\"" + longest + " \"") ==
        "test.yaml:3:44: error: Linear 'fc': out_features: this expression is 1,048,577 characters long; the limit is 1,048,576");
}
