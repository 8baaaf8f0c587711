// Evaluating a spec's values: variables, --set overrides and `$expressions`, with errors that
// name the layer and attribute a value belongs to.
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "expand.hpp"
#include "expand_budget.hpp"
#include "expression.hpp"

namespace nnmem::raw {

namespace {

// Expressions longer than this are not quoted in messages: a machine-written one can be
// megabytes long.
constexpr std::size_t kQuotedExpressionLength = 120;

[[noreturn]] void fail(const SourceLoc& at, const std::string& message) { throw Error(at, message); }

std::string prefix(const std::string& subject, const std::string& key) {
  return (subject.empty() ? "" : subject + ": ") + (key.empty() ? "" : key + ": ");
}

expr::Scalar to_scalar(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Int: return v.integer;
    case Value::Kind::Float: return v.real;
    case Value::Kind::Bool: return v.boolean;
    default: return v.text;
  }
}

Value from_scalar(const expr::Scalar& s, const SourceLoc& loc) {
  Value v;
  v.loc = loc;
  if (auto* i = std::get_if<std::int64_t>(&s)) { v.kind = Value::Kind::Int; v.integer = *i; }
  else if (auto* r = std::get_if<double>(&s)) { v.kind = Value::Kind::Float; v.real = *r; }
  else if (auto* b = std::get_if<bool>(&s)) { v.kind = Value::Kind::Bool; v.boolean = *b; }
  else { v.kind = Value::Kind::String; v.text = std::get<std::string>(s); }
  return v;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// A variable's value for arithmetic: a single value, not a list or a mapping.
std::optional<expr::Scalar> scalar_variable(const VarScope& vars, const std::string& name) {
  const Value* v = vars.find(name);
  if (!v) return std::nullopt;
  if (v->kind == Value::Kind::List) throw expr::ExprError("'" + name + "' is a list; use it alone, as $" + name, 0);
  if (v->kind == Value::Kind::Map) throw expr::ExprError("'" + name + "' is a mapping, which arithmetic cannot use", 0);
  if (v->kind == Value::Kind::Null) throw expr::ExprError("'" + name + "' has no value (null)", 0);
  return to_scalar(*v);
}

}  // namespace

void VarScope::add(std::string name, Value value) {
  index.emplace(name, vars.size());  // a repeated name keeps its first value
  vars.emplace_back(std::move(name), std::move(value));
}

const Value* VarScope::find(const std::string& name) const {
  if (auto it = index.find(name); it != index.end()) return &vars[it->second].second;
  return parent ? parent->find(name) : nullptr;
}

std::vector<std::string> VarScope::names() const {
  std::vector<std::string> out = parent ? parent->names() : std::vector<std::string>{};
  for (const auto& [n, v] : vars) out.push_back(n);
  return out;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& names) {
  const std::string near = nearest_name(word, names);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

Value evaluate(const RawValue& raw, const VarScope& vars, const std::string& subject, const std::string& key) {
  if (raw.is_map) {
    Value map;
    map.kind = Value::Kind::Map;
    map.loc = raw.loc;
    return map;
  }
  if (raw.is_list) {
    Value list;
    list.kind = Value::Kind::List;
    list.loc = raw.loc;
    for (const auto& item : raw.items) list.items.push_back(evaluate(item, vars, subject, key));
    return list;
  }
  if (!raw.expression) return raw.literal;
  const std::string& text = *raw.expression;
  // `$name` alone substitutes the variable's value as it is, lists included.
  const auto* ops = raw.program ? &raw.program->ops : nullptr;
  const bool one_name = ops && ops->size() == 1 && ops->front().kind == expr::Operation::Kind::Variable;
  if (const Value* whole = one_name ? vars.find(raw.program->name(ops->front())) : ops ? nullptr : vars.find(trimmed(text))) {
    Value v = *whole;
    v.loc = raw.loc;
    for (auto& item : v.items) item.loc = raw.loc;
    return v;
  }
  try {
    const expr::Lookup lookup = [&](const std::string& name) { return scalar_variable(vars, name); };
    return from_scalar(raw.program ? expr::evaluate(*raw.program, lookup) : expr::evaluate(text, lookup), raw.loc);
  } catch (const expr::ExprError& e) {
    std::string msg = prefix(subject, key);
    if (text.size() <= kQuotedExpressionLength) msg += "in '$" + text + "': ";
    const std::string& unknown = e.unknown_variable();
    for (const VarScope* s = &vars; s && !unknown.empty(); s = s->parent)
      if (auto it = s->later.find(unknown); it != s->later.end())
        fail(raw.loc, msg + "variable '" + unknown + "' is defined later (line " + std::to_string(it->second) +
                          "); a variable can only use the variables above it");
    msg += e.what();
    if (!unknown.empty()) msg += suggestion(unknown, vars.names());
    fail(raw.loc, msg);
  }
}

std::int64_t evaluate_int(const RawValue& raw, const VarScope& vars, const std::string& subject,
                          const std::string& key, std::int64_t min) {
  const Value v = evaluate(raw, vars, subject, key);
  const std::string what = prefix(subject, "") + key;
  if (v.kind != Value::Kind::Int) fail(raw.loc, what + " must be an integer, found " + v.describe());
  if (v.integer < min)
    fail(raw.loc, what + " must be at least " + std::to_string(min) + ", found " + std::to_string(v.integer));
  return v.integer;
}

bool evaluate_bool(const RawValue& raw, const VarScope& vars, const std::string& subject, const std::string& key) {
  const Value v = evaluate(raw, vars, subject, key);
  if (v.kind != Value::Kind::Bool)
    fail(raw.loc, prefix(subject, "") + key + " must be true or false, found " + v.describe());
  return v.boolean;
}

VarScope evaluate_variables(const RawSpec& spec, const LoadOptions& options) {
  VarScope globals;
  std::vector<std::string> declared;
  for (const auto& v : spec.variables) declared.push_back(v.name.name);
  const std::unordered_set<std::string_view> known(declared.begin(), declared.end());  // (not a search per --set)
  std::map<std::string, const std::pair<std::string, std::string>*> overrides;
  for (const auto& o : options.overrides) {
    const SourceLoc at = spec.variables.empty() ? spec.loc : spec.variables_loc;
    if (!known.count(o.first)) {
      std::string msg = "--set " + o.first + "=" + o.second + ": the spec has no variable '" + o.first + "'";
      if (declared.empty()) msg += " (it declares no variables)";
      else msg += suggestion(o.first, declared);
      fail(at, msg);
    }
    // Taking the last of two would silently drop the first: a typo in a script, most likely.
    if (auto [it, fresh] = overrides.emplace(o.first, &o); !fresh)
      fail(at, "--set " + o.first + "=" + o.second + ": '" + o.first + "' is already set by --set " + o.first + "=" +
                   it->second->second + "; give each variable once");
  }
  for (const auto& var : spec.variables) globals.later[var.name.name] = var.name.loc.line;
  for (const auto& var : spec.variables) {
    globals.later.erase(var.name.name);
    RawValue raw = var.value;
    if (auto it = overrides.find(var.name.name); it != overrides.end()) {
      const std::string& text = it->second->second;
      raw = RawValue{};
      raw.loc = var.name.loc;
      if (!text.empty() && text[0] == '$') set_expression(raw, text.substr(1), "--set " + var.name.name + ": ");
      else raw.literal = parse_literal(text, var.name.loc);
      if (!raw.expression && raw.literal.kind == Value::Kind::Null)
        fail(var.name.loc, "--set " + var.name.name + "= needs a value");
    }
    Value v = evaluate(raw, globals, "", "");
    if (v.kind == Value::Kind::Null) fail(var.name.loc, "variable '" + var.name.name + "' has no value");
    globals.add(var.name.name, std::move(v));
  }
  return globals;
}

std::map<std::string, RawValue> input_overrides(const RawSpec& spec, const LoadOptions& options) {
  std::vector<std::string> declared;
  for (const auto& in : spec.inputs) declared.push_back(in.name.name);
  std::unordered_map<std::string_view, std::size_t> place;  // input name -> its place
  for (std::size_t i = declared.size(); i-- > 0;) place[declared[i]] = i;
  std::map<std::string, RawValue> out;
  for (const auto& [name, text] : options.input_shapes) {
    const std::string flag = "--input " + name + "=" + text;
    const auto found = place.find(name);
    const auto input = found == place.end() ? declared.end() : declared.begin() + static_cast<std::ptrdiff_t>(found->second);
    if (input == declared.end()) fail(spec.loc, flag + ": the spec has no input '" + name + "'" + suggestion(name, declared));
    const SourceLoc at = spec.inputs[static_cast<std::size_t>(input - declared.begin())].name.loc;
    std::string body = trimmed(text);
    if (body.size() >= 2 && body.front() == '[' && body.back() == ']') body = body.substr(1, body.size() - 2);
    RawValue shape;
    shape.is_list = true;
    shape.loc = at;
    for (std::size_t start = 0; start <= body.size();) {
      const std::size_t comma = std::min(body.find(',', start), body.size());
      const std::string item = trimmed(body.substr(start, comma - start));
      if (item.empty() || item.find_first_of("[]") != std::string::npos)
        fail(at, flag + ": expected a list of sizes per sample, such as [3, 224, 224]");
      RawValue size;
      size.loc = at;
      if (item[0] == '$') set_expression(size, item.substr(1), flag + ": ");
      else size.literal = parse_literal(item, at);
      shape.items.push_back(std::move(size));
      start = comma + 1;
    }
    if (!out.emplace(name, std::move(shape)).second) fail(at, flag + ": input '" + name + "' is already given by --input; give each input once");
  }
  return out;
}

VarScope block_arguments(const RawBlock& block, const RawEntry& use, const VarScope& vars, const VarScope& globals,
                         const std::string& who, ExpansionBudget& budget) {
  VarScope params{&globals, {}, {}, {}};
  std::vector<std::string> names;
  for (const auto& p : block.params) names.push_back(p.name);
  for (const auto& a : use.attrs)
    if (std::find(names.begin(), names.end(), a.name) == names.end())
      throw Error(a.key_loc, who + ": has no parameter '" + a.name + "'" +
                                 (names.empty() ? " (block '" + block.name + "' takes none)" : suggestion(a.name, names)));
  for (const auto& p : block.params) {
    const auto arg = std::find_if(use.attrs.begin(), use.attrs.end(), [&](const RawAttr& a) { return a.name == p.name; });
    if (arg != use.attrs.end()) params.add(p.name, evaluate(arg->value, vars, who, p.name));
    else if (p.fallback) params.add(p.name, evaluate(*p.fallback, params, who, p.name));
    else throw Error(use.loc, who + ": needs parameter '" + p.name + "' (defined at line " + std::to_string(p.loc.line) + ")");
    budget.spend_values(arg != use.attrs.end() ? arg->key_loc : p.loc, params.vars.back().second);
  }
  return params;
}

DType float_dtype(const Named& n) {
  const auto d = parse_dtype(n.name);
  if (!d || !is_floating(*d))
    fail(n.loc, "'" + n.name + "' is not a floating-point dtype; expected float32, float16, bfloat16 or float64");
  return *d;
}

InputSpec expand_input(const RawInput& in, const std::map<std::string, RawValue>& input_shapes, const VarScope& globals) {
  InputSpec out;
  out.name = in.name.name;
  out.loc = in.name.loc;
  const auto given = input_shapes.find(in.name.name);
  const RawValue& shape = given == input_shapes.end() ? in.shape : given->second;
  const std::string subject = given == input_shapes.end() ? "" : "--input " + in.name.name;
  for (const auto& dim : shape.items)
    out.shape.push_back(evaluate_int(dim, globals, subject, "a size in the shape of input '" + in.name.name + "'", 1));
  if (in.dtype) {
    const auto d = parse_dtype(in.dtype->name);
    if (!d) fail(in.dtype->loc, "unknown dtype '" + in.dtype->name +
                                    "'; expected float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8 or bool");
    out.dtype = *d;
    out.dtype_given = true;
  }
  return out;
}

}  // namespace nnmem::raw
