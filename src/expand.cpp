// RawSpec -> ModelSpec: evaluates variables and `$expressions`, instantiates blocks, unrolls
// `repeat`, drops `when: false` layers (their name then stands for their input), and resolves
// every input reference to a fully qualified name. Work is bounded by LoadOptions::max_layers.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "expression.hpp"
#include "raw_spec.hpp"

namespace nnmem::raw {
namespace {

/// Variables visible to expressions: a chain of scopes (block parameters, then the spec's).
struct VarScope {
  const VarScope* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(const std::string& name) const {
    for (const auto& [n, v] : vars)
      if (n == name) return &v;
    return parent ? parent->find(name) : nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out = parent ? parent->names() : std::vector<std::string>{};
    for (const auto& [n, v] : vars) out.push_back(n);
    return out;
  }
};

/// Names visible to `input:` references: one list of layers (the spec's, or a block's).
struct NameScope {
  std::string prefix;                          // "layer1.0."
  std::string owner;                           // for messages: "the spec", "block 'Bottleneck'"
  std::map<std::string, std::string> bound;    // local name -> qualified value name
  std::map<std::string, SourceLoc> declared;   // every local name of this list (forward refs)
  std::optional<std::string> previous;         // what an entry without `input` reads
};

/// Settings a block instance passes down to every layer inside it.
struct Inherited {
  bool trainable = true;
  bool functional = false;
};

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

class Expander {
 public:
  Expander(const RawSpec& raw, const LoadOptions& options)
      : raw_(raw), options_(options), budget_(options.max_layers) {
    for (const auto& b : raw_.blocks) blocks_[b.name] = &b;
  }

  ModelSpec run() {
    ModelSpec spec;
    spec.file = raw_.file;
    spec.loc = raw_.loc;
    spec.name = raw_.name ? raw_.name->name : std::filesystem::path(raw_.file).stem().string();
    if (raw_.dtype) spec.dtype = float_dtype(*raw_.dtype);
    evaluate_variables(spec);

    NameScope top;
    top.owner = "the spec";
    for (const auto& in : raw_.inputs) {
      spec.inputs.push_back(input(in));
      claim(in.name.name, in.name.loc);
      top.bound[in.name.name] = in.name.name;
    }
    if (raw_.inputs.size() == 1) top.previous = raw_.inputs[0].name.name;
    spec_ = &spec;
    expand_list(raw_.layers, top, globals_, Inherited{});

    if (raw_.outputs) {
      for (const auto& out : *raw_.outputs) {
        spec.outputs.push_back(resolve(out, top, nullptr));
        spec.output_locs.push_back(out.loc);
      }
    } else {
      spec.outputs.push_back(*top.previous);
      spec.output_locs.push_back(raw_.layers.back().loc);
    }
    if (raw_.loss) {
      static const std::vector<std::string> losses = {"cross_entropy", "mse", "mean"};
      if (std::find(losses.begin(), losses.end(), raw_.loss->name) == losses.end())
        fail(raw_.loss->loc, "unknown loss '" + raw_.loss->name + "'" + suggestion(raw_.loss->name, losses) +
                                 "; expected cross_entropy, mse or mean");
      spec.loss = raw_.loss->name;
      spec.loss_loc = raw_.loss->loc;
    }
    return spec;
  }

 private:
  [[noreturn]] static void fail(const SourceLoc& at, const std::string& message) { throw Error(at, message); }

  static std::string suggestion(const std::string& word, const std::vector<std::string>& names) {
    const std::string near = nearest_name(word, names);
    return near.empty() ? "" : " (did you mean '" + near + "'?)";
  }

  DType float_dtype(const Named& n) const {
    const auto d = parse_dtype(n.name);
    if (!d || !is_floating(*d))
      fail(n.loc, "'" + n.name + "' is not a floating-point dtype; expected float32, float16, bfloat16 or float64");
    return *d;
  }

  // --- values -------------------------------------------------------------------------------

  Value eval(const RawValue& raw, const VarScope& vars) const {
    if (raw.is_list) {
      Value list;
      list.kind = Value::Kind::List;
      list.loc = raw.loc;
      for (const auto& item : raw.items) {
        Value v = eval(item, vars);
        if (v.kind == Value::Kind::List) fail(item.loc, "a list cannot contain another list");
        list.items.push_back(std::move(v));
      }
      return list;
    }
    if (!raw.expression) return raw.literal;
    const std::string& text = *raw.expression;
    // `$name` alone substitutes the variable's value as it is, lists included.
    if (const Value* whole = vars.find(trimmed(text))) {
      Value v = *whole;
      v.loc = raw.loc;
      for (auto& item : v.items) item.loc = raw.loc;
      return v;
    }
    const expr::Lookup lookup = [&](const std::string& name) -> std::optional<expr::Scalar> {
      const Value* v = vars.find(name);
      if (!v) return std::nullopt;
      if (v->kind == Value::Kind::List)
        throw expr::ExprError("'" + name + "' is a list; use it alone, as $" + name, 0);
      return to_scalar(*v);
    };
    try {
      return from_scalar(expr::evaluate(text, lookup), raw.loc);
    } catch (const expr::ExprError& e) {
      std::string msg = "in '$" + text + "': " + e.what();
      const std::string prefix = "unknown variable '";
      if (std::string(e.what()).rfind(prefix, 0) == 0) {
        const std::string what = e.what();
        const std::string name = what.substr(prefix.size(), what.size() - prefix.size() - 1);
        msg += suggestion(name, vars.names());
      }
      fail(raw.loc, msg);
    }
  }

  static std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
  }

  std::int64_t eval_int(const RawValue& raw, const VarScope& vars, const std::string& what, std::int64_t min) const {
    const Value v = eval(raw, vars);
    if (v.kind != Value::Kind::Int) fail(raw.loc, what + " must be an integer, found " + v.describe());
    if (v.integer < min) fail(raw.loc, what + " must be at least " + std::to_string(min) + ", found " + std::to_string(v.integer));
    return v.integer;
  }

  bool eval_bool(const RawValue& raw, const VarScope& vars, const std::string& what) const {
    const Value v = eval(raw, vars);
    if (v.kind != Value::Kind::Bool) fail(raw.loc, what + " must be true or false, found " + v.describe());
    return v.boolean;
  }

  // --- variables and inputs -----------------------------------------------------------------

  void evaluate_variables(ModelSpec& spec) {
    std::map<std::string, const std::pair<std::string, std::string>*> overrides;
    std::vector<std::string> declared;
    for (const auto& v : raw_.variables) declared.push_back(v.name.name);
    for (const auto& o : options_.overrides) {
      if (std::find(declared.begin(), declared.end(), o.first) == declared.end()) {
        std::string msg = "--set " + o.first + "=" + o.second + ": the spec has no variable '" + o.first + "'";
        if (declared.empty()) msg += " (it declares no variables)";
        else msg += suggestion(o.first, declared);
        fail(raw_.variables.empty() ? raw_.loc : raw_.variables_loc, msg);
      }
      overrides[o.first] = &o;
    }
    for (const auto& var : raw_.variables) {
      RawValue raw = var.value;
      if (auto it = overrides.find(var.name.name); it != overrides.end()) {
        const std::string& text = it->second->second;
        raw = RawValue{};
        raw.loc = var.name.loc;
        if (!text.empty() && text[0] == '$') raw.expression = text.substr(1);
        else raw.literal = parse_literal(text, var.name.loc);
        if (!raw.expression && raw.literal.kind == Value::Kind::Null)
          fail(var.name.loc, "--set " + var.name.name + "= needs a value");
      }
      Value v = eval(raw, globals_);
      if (v.kind == Value::Kind::Null) fail(var.name.loc, "variable '" + var.name.name + "' has no value");
      globals_.vars.emplace_back(var.name.name, v);
      spec.variables.emplace_back(var.name.name, std::move(v));
    }
  }

  InputSpec input(const RawInput& in) const {
    InputSpec out;
    out.name = in.name.name;
    out.loc = in.name.loc;
    for (const auto& dim : in.shape.items)
      out.shape.push_back(eval_int(dim, globals_, "a size in the shape of input '" + in.name.name + "'", 1));
    if (in.dtype) {
      const auto d = parse_dtype(in.dtype->name);
      if (!d) fail(in.dtype->loc, "unknown dtype '" + in.dtype->name +
                                      "'; expected float32, float16, bfloat16, float64, int64, int32, int16, int8, uint8 or bool");
      out.dtype = *d;
      out.dtype_given = true;
    }
    return out;
  }

  // --- names --------------------------------------------------------------------------------

  void claim(const std::string& qualified, const SourceLoc& at) {
    if (auto [it, fresh] = taken_.emplace(qualified, at); !fresh)
      fail(at, "the name '" + qualified + "' is already used (line " + std::to_string(it->second.line) + ")");
  }

  std::string resolve(const Named& ref, const NameScope& scope, const std::string* self) const {
    if (auto it = scope.bound.find(ref.name); it != scope.bound.end()) return it->second;
    if (self && ref.name == *self) fail(ref.loc, "'" + ref.name + "' reads its own output; a layer can only read layers above it");
    if (auto it = scope.declared.find(ref.name); it != scope.declared.end())
      fail(ref.loc, "'" + ref.name + "' is defined later (line " + std::to_string(it->second.line) +
                        "); a layer can only read layers above it, so the graph has no cycles");
    std::vector<std::string> names;
    for (const auto& [n, q] : scope.bound) names.push_back(n);
    fail(ref.loc, "no layer or input named '" + ref.name + "' in " + scope.owner + suggestion(ref.name, names));
  }

  std::vector<std::string> entry_inputs(const RawEntry& e, const NameScope& scope, const std::string& local) const {
    std::vector<std::string> out;
    if (e.inputs) {
      for (const auto& ref : *e.inputs) out.push_back(resolve(ref, scope, &local));
    } else if (scope.previous) {
      out.push_back(*scope.previous);
    } else {
      fail(e.loc, "this layer does not say what it reads and there is no previous layer; add 'input: NAME' (the model has " +
                      std::to_string(raw_.inputs.size()) + " inputs)");
    }
    return out;
  }

  // --- expansion ----------------------------------------------------------------------------

  // Every expanded entry (kept or skipped) costs one unit of the budget, so no spec can make
  // the expansion run away; the error points at the top-level entry being expanded.
  void spend(const SourceLoc& at, std::int64_t count) {
    if (count <= budget_) {
      budget_ -= count;
      return;
    }
    const std::string msg = "expanding this would create more than " + with_commas(options_.max_layers) +
                            " layers, the limit (raise it with --max-layers)";
    if (top_entry_ && top_entry_->line != at.line) throw Error(*top_entry_, msg, {{at, "the limit was reached here"}});
    fail(at, msg);
  }

  void expand_list(const std::vector<RawEntry>& entries, NameScope& scope, const VarScope& vars, Inherited inherited) {
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const std::string local = entries[k].name ? entries[k].name->name : std::to_string(k);
      const SourceLoc at = entries[k].name ? entries[k].name->loc : entries[k].loc;
      if (auto [it, fresh] = scope.declared.emplace(local, at); !fresh)
        fail(at, "duplicate layer name '" + local + "' (first used at line " + std::to_string(it->second.line) + ")");
    }
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const RawEntry& e = entries[k];
      if (stack_.empty()) top_entry_ = e.loc;
      const std::string local = e.name ? e.name->name : std::to_string(k);
      std::vector<std::string> inputs = entry_inputs(e, scope, local);
      spend(e.loc, 1);
      if (e.when && !eval_bool(*e.when, vars, "'when'")) {
        if (inputs.size() != 1)
          fail(e.when->loc, "a layer skipped with 'when: false' stands for its input, so it must have exactly one input");
        scope.bound[local] = inputs[0];
        continue;
      }
      const std::string qualified = scope.prefix + local;
      std::string output;
      if (e.repeat) {
        const std::int64_t count = eval_int(*e.repeat, vars, "'repeat'", 1);
        spend(e.repeat->loc, count - 1);
        for (std::int64_t i = 0; i < count; ++i) {
          VarScope with_index{&vars, {{"index", from_scalar(i, e.repeat->loc)}}};
          output = instantiate(e, qualified + "." + std::to_string(i), inputs, with_index, inherited);
          inputs = {output};
        }
      } else {
        output = instantiate(e, qualified, inputs, vars, inherited);
      }
      scope.bound[local] = output;
      scope.previous = output;
    }
  }

  Inherited inherit(const RawEntry& e, const VarScope& vars, Inherited inherited) const {
    if (e.trainable) inherited.trainable = eval_bool(*e.trainable, vars, "'trainable'") && inherited.trainable;
    if (e.functional) inherited.functional = eval_bool(*e.functional, vars, "'functional'") || inherited.functional;
    return inherited;
  }

  std::string instantiate(const RawEntry& e, const std::string& qualified, const std::vector<std::string>& inputs,
                          const VarScope& vars, Inherited inherited) {
    inherited = inherit(e, vars, inherited);
    if (e.block) return instantiate_block(e, qualified, inputs, vars, inherited);
    LayerSpec layer;
    layer.name = qualified;
    const Value type = eval(*e.type, vars);
    if (type.kind != Value::Kind::String) fail(e.type->loc, "'type' must be a layer type name, found " + type.describe());
    layer.type = type.text;
    layer.type_loc = e.type->loc;
    layer.loc = e.loc;
    layer.inputs = inputs;
    if (e.inputs)
      for (const auto& ref : *e.inputs) layer.input_locs.push_back(ref.loc);
    layer.input_locs.resize(inputs.size(), e.loc);
    layer.trainable = inherited.trainable;
    layer.functional = inherited.functional;
    for (const auto& a : e.attrs) layer.attrs.push_back({a.name, eval(a.value, vars), a.key_loc});
    claim(qualified, e.name ? e.name->loc : e.loc);
    spec_->layers.push_back(std::move(layer));
    return qualified;
  }

  std::string instantiate_block(const RawEntry& e, const std::string& qualified, const std::vector<std::string>& inputs,
                                const VarScope& vars, Inherited inherited) {
    const auto found = blocks_.find(e.block->name);
    if (found == blocks_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, b] : blocks_) names.push_back(n);
      fail(e.block->loc, "no block named '" + e.block->name + "'" + suggestion(e.block->name, names));
    }
    const RawBlock& block = *found->second;
    if (std::find(stack_.begin(), stack_.end(), block.name) != stack_.end()) {
      std::string chain;
      for (const auto& s : stack_) chain += s + " -> ";
      fail(e.block->loc, "block '" + block.name + "' instantiates itself (" + chain + block.name + ")");
    }
    if (inputs.size() != block.inputs.size())
      fail(e.loc, "block '" + block.name + "' takes " + std::to_string(block.inputs.size()) + " input(s), but " +
                      std::to_string(inputs.size()) + " are given");

    // Arguments are evaluated where the block is used; defaults where it is defined.
    VarScope params{&globals_, {}};
    std::vector<std::string> param_names;
    for (const auto& p : block.params) param_names.push_back(p.name);
    for (const auto& a : e.attrs)
      if (std::find(param_names.begin(), param_names.end(), a.name) == param_names.end())
        fail(a.key_loc, "block '" + block.name + "' has no parameter '" + a.name + "'" + suggestion(a.name, param_names));
    for (const auto& p : block.params) {
      const auto arg = std::find_if(e.attrs.begin(), e.attrs.end(), [&](const RawAttr& a) { return a.name == p.name; });
      if (arg != e.attrs.end()) params.vars.emplace_back(p.name, eval(arg->value, vars));
      else if (p.fallback) params.vars.emplace_back(p.name, eval(*p.fallback, params));
      else fail(e.loc, "block '" + block.name + "' needs parameter '" + p.name + "' (defined at line " + std::to_string(p.loc.line) + ")");
    }

    NameScope inner;
    inner.prefix = qualified + ".";
    inner.owner = "block '" + block.name + "'";
    for (std::size_t i = 0; i < inputs.size(); ++i) inner.bound[block.inputs[i].name] = inputs[i];
    inner.previous = inputs[0];
    stack_.push_back(block.name);
    expand_list(block.layers, inner, params, inherited);
    stack_.pop_back();
    return block.output ? resolve(*block.output, inner, nullptr) : *inner.previous;
  }

  const RawSpec& raw_;
  const LoadOptions& options_;
  std::int64_t budget_;
  std::map<std::string, const RawBlock*> blocks_;
  VarScope globals_;
  std::map<std::string, SourceLoc> taken_;
  std::vector<std::string> stack_;       // blocks being instantiated, outermost first
  std::optional<SourceLoc> top_entry_;  // the top-level entry being expanded
  ModelSpec* spec_ = nullptr;
};

}  // namespace

ModelSpec expand(const RawSpec& spec, const LoadOptions& options) { return Expander(spec, options).run(); }

}  // namespace nnmem::raw
