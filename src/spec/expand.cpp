// RawSpec -> ModelSpec: instantiates blocks, unrolls `repeat`, drops `when: false` layers
// (their name then stands for their input), and resolves every input reference to a fully
// qualified name; values are evaluated by expand_values.cpp. Work is bounded by
// expand_budget.hpp (layers, and the values they hold) and by kMaxBlockDepth. An error about a
// layer starts with its title: "Conv2d 'stage2.conv': …", or "Residual 'res': …" for a block
// instance.
#include <algorithm>
#include <filesystem>

#include "expand.hpp"
#include "expand_budget.hpp"
#include "name_scope.hpp"
#include "taken_names.hpp"

namespace nnmem::raw {
namespace {

/// How deeply blocks may use blocks. Expansion recurses once per level, so the bound keeps a
/// spec (a chain of thousands of blocks, each using the next) from exhausting the stack; real
/// networks nest a handful of levels.
constexpr std::size_t kMaxBlockDepth = 500;

/// Settings a block instance passes down to every layer inside it.
struct Inherited {
  bool trainable = true;
  bool functional = false;
  std::string checkpoint;      // the checkpointed entry around it ("layer1.0"), if any
  SourceLoc checkpoint_loc;
  std::string unit;            // the top-level entry instance it belongs to
  bool unit_is_block = false;
};

/// Which `repeat` instance is being built, for messages.
struct Instance {
  std::int64_t index = 0;
  const std::string* entry_title = nullptr;  // the repeated entry: "Linear 'fc'"
};

class Expander {
 public:
  Expander(const RawSpec& raw, const LoadOptions& options)
      : raw_(raw), options_(options), budget_(options.max_layers) {
    for (const auto& b : raw_.blocks) {
      check_registration(b.layers, b.registers, "block '" + b.name + "'");
      check_modules(b.layers, b.modules, "block '" + b.name + "'");
      blocks_[b.name] = &b;
    }
    check_registration(raw_.layers, raw_.registers, "the spec");
    check_modules(raw_.layers, raw_.modules, "the spec");
  }

  ModelSpec run() {
    ModelSpec spec;
    spec.file = raw_.file;
    spec.loc = raw_.loc;
    spec.name = raw_.name ? raw_.name->name : std::filesystem::path(raw_.file).stem().string();
    if (raw_.dtype) spec.dtype = float_dtype(*raw_.dtype);
    globals_ = evaluate_variables(raw_, options_);
    spec.variables = globals_.vars;
    input_shapes_ = input_overrides(raw_, options_);
    spec.set = options_.overrides;
    spec.input_shapes = options_.input_shapes;

    NameScope top;
    top.owner = "the spec";
    std::vector<std::string> until_return;  // `held_until: model`: referred to until the model returns
    top.until_return = top.by_model = &until_return;
    for (const auto& in : raw_.inputs) {
      spec.inputs.push_back(expand_input(in, input_shapes_, globals_));
      claim(in.name.name, in.name.loc, -static_cast<std::ptrdiff_t>(spec.inputs.size()), "input '" + in.name.name + "'",
            nullptr);  // input k is holder -1 - k
      top.bound[in.name.name] = in.name.name;
    }
    if (raw_.inputs.size() == 1) top.previous = raw_.inputs[0].name.name;
    spec_ = &spec;
    modules_ = module_scope(raw_, globals_);
    top.modules = &modules_;
    add_registrations(raw_.registers, "", spec_->registrations);
    add_modules(raw_.modules, "", spec_->unnamed_modules);
    for (Registration& r : spec_->registrations) r.module = modules_.qualify(r.module);
    for (std::string& m : spec_->unnamed_modules) m = modules_.qualify(m);
    // A layer per top-level entry (a written-out spec: exactly; no more than the layers allowed),
    // so that a long list does not grow by doubling and then shrink, its old and new arrays held
    // at once beside the raw entries (at 100,000 written-out layers, 31 and 24 MB: the load's peak).
    spec.layers.reserve(static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(raw_.layers.size()), options_.max_layers)));
    expand_list(raw_.layers, top, globals_, Inherited{});
    for (const auto& [var, value] : top.vars) refer(value);  // forward() returns
    for (const std::string& value : until_return) refer(value);

    if (raw_.loss) spec.losses = expand_losses(*raw_.loss, globals_);
    bind_outputs(raw_, top, spec);
    // The layers are kept for as long as the graph that is built from them: without the up to
    // doubled capacity their vector grew to (a third of it at 100,000 layers).
    if (spec.layers.capacity() - spec.layers.size() > spec.layers.capacity() / 8) spec.layers.shrink_to_fit();
    return spec;
  }

 private:
  [[noreturn]] static void fail(const SourceLoc& at, const std::string& message) { throw Error(at, message); }

  // How errors name an entry: "Conv2d 'stage2.conv'", "Residual 'res'" for a block instance,
  // "layer 'fc1'" while its type is not (yet) a known name.
  std::string title(const RawEntry& e, const std::string& qualified, const VarScope& vars) const {
    std::string type = "layer";
    if (e.block) {
      if (blocks_.count(e.block->name)) type = e.block->name;
    } else if (!e.type->expression) {
      if (e.type->literal.kind == Value::Kind::String) type = e.type->literal.text;
    } else {
      try {
        const Value v = evaluate(*e.type, vars, "", "");
        if (v.kind == Value::Kind::String) type = v.text;
      } catch (const Error&) {
        // Reported where the type is evaluated, under the title "layer '…'".
      }
    }
    return type + " '" + qualified + "'";
  }

  // --- names --------------------------------------------------------------------------------

  // Takes `qualified` for the layer of spec_->layers `holder` (about to be added), or for holder
  // < 0 the model's input -1 - holder, named at `at`.
  void claim(const std::string& qualified, const SourceLoc& at, std::ptrdiff_t holder, const std::string& who,
             const Instance* instance) {
    const auto name_of = [this](std::ptrdiff_t h) -> std::string_view {
      return h < 0 ? raw_.inputs[static_cast<std::size_t>(-1 - h)].name.name : spec_->layers[static_cast<std::size_t>(h)].name;
    };
    const TakenNames::Holder* taken = taken_.take(qualified, {holder, &at}, name_of);
    if (!taken) return;
    const TakenNames::Holder& h = *taken;
    const std::string title = h.holder < 0 ? "input '" + qualified + "'"
                                           : spec_->layers[static_cast<std::size_t>(h.holder)].type + " '" + qualified + "'";
    const std::string used_by = title + " (line " + std::to_string(h.loc->line) + ")";
    if (instance)
      fail(at, *instance->entry_title + ": 'repeat' names its instance " + std::to_string(instance->index) + " '" +
                   qualified + "', but that name is already used by " + used_by);
    fail(at, who + ": the name '" + qualified + "' is already used by " + used_by);
  }

  std::vector<std::string> entry_inputs(const RawEntry& e, const NameScope& scope, const std::string& local,
                                        const std::string& who) const {
    std::vector<std::string> out;
    if (e.inputs) {
      for (const auto& ref : *e.inputs) out.push_back(scope.resolve(ref, &local, who));
    } else if (scope.previous) {
      out.push_back(*scope.previous);
    } else {
      std::string names;
      for (const auto& in : raw_.inputs) names += (names.empty() ? "" : ", ") + in.name.name;
      fail(e.loc, who + ": does not say what it reads and there is no previous layer; add 'input: NAME' (the model has " +
                      std::to_string(raw_.inputs.size()) + " inputs: " + names + ")");
    }
    return out;
  }

  // --- expansion ----------------------------------------------------------------------------

  void expand_list(const std::vector<RawEntry>& entries, NameScope& scope, const VarScope& vars, Inherited inherited) {
    scope.declare(entries);
    for (std::size_t k = 0; k < entries.size(); ++k) {
      if (stack_.empty()) budget_.entering(entries[k].loc);
      expand_entry(entries[k], entries[k].name ? entries[k].name->name : std::to_string(k), scope, vars, inherited);
    }
  }

  void expand_entry(const RawEntry& e, const std::string& local, NameScope& scope, const VarScope& vars,
                    Inherited inherited) {
    const std::string qualified = scope.qualify(local);
    const std::string who = title(e, qualified, vars);
    std::vector<std::string> inputs = entry_inputs(e, scope, local, who);
    budget_.spend_entries(e.loc, 1);
    const bool skipped = e.when && !evaluate_bool(*e.when, vars, who, "'when'");
    const std::int64_t count = skipped || !e.repeat ? 1 : evaluate_int(*e.repeat, vars, who, "'repeat'", 0);
    if (skipped || count == 0) {
      // Like nn.Identity, or nn.Sequential() of no layers: the name stands for the first input;
      // one that reads nothing (a Parameter a variable removes) stands for nothing.
      if (inputs.empty()) {
        scope.removed.emplace(local, (skipped ? e.when : e.repeat)->loc);
        return;
      }
      scope.bound[local] = inputs[0];
      for (const std::string& v : scope.python_references(e, local, who, inputs[0], false)) refer(v);
      return;
    }
    std::string output;
    if (e.repeat) {
      if (!e.block && count > options_.max_layers)
        fail(e.repeat->loc, who + ": repeat " + with_commas(count) + " would create more than " +
                                with_commas(options_.max_layers) + " layers, the limit (raise it with --max-layers)");
      budget_.spend_entries(e.repeat->loc, count - 1);
      for (std::int64_t i = 0; i < count; ++i) {
        VarScope with_index{&vars, {}, {}, {}};
        with_index.add("index", index_value(i, e.repeat->loc));
        const Instance instance{i, &who};
        const std::size_t before = spec_->layers.size();
        output = instantiate(e, qualified + "." + std::to_string(i), inputs, scope, with_index, inherited, &instance);
        inputs.front() = output;  // the next reads it in place of its first input; the others stay (a mask, cos/sin)
        if (i == 0) reserve_for(count - 1, spec_->layers.size() - before);
      }
    } else {
      output = instantiate(e, qualified, inputs, scope, vars, inherited, nullptr, &who);
    }
    scope.bound[local] = output;
    scope.previous = output;
    for (const std::string& v : scope.python_references(e, local, who, output, true)) refer(v);
  }

  // Room for `instances` more instances of as many layers as the first made, and the top-level
  // entries (no more than the layers left): a repeated block grows the list once instead of
  // by doubling, then shrinking to fit, every layer moved each time (at 100,000 layers, a third
  // of the process's page faults). Only address space when an instance makes fewer; the list
  // is shrunk to fit when more than an eighth of it is spare.
  void reserve_for(std::int64_t instances, std::size_t layers_each) {
    const std::int64_t left = budget_.layers_left(), each = static_cast<std::int64_t>(layers_each);
    if (each == 0 || instances <= 0) return;
    const std::int64_t more = instances > left / each ? left : std::min(left, instances * each + static_cast<std::int64_t>(raw_.layers.size()));
    if (more > 0) spec_->layers.reserve(spec_->layers.size() + static_cast<std::size_t>(more));
  }

  // Python references (spec.hpp's Reference): `value` is referred to until the layer made last.
  void refer(const std::string& value) {
    if (!spec_->layers.empty()) spec_->references.push_back({value, spec_->layers.size() - 1});
  }

  static Value index_value(std::int64_t i, const SourceLoc& at) {
    Value v;
    v.kind = Value::Kind::Int;
    v.integer = i;
    v.loc = at;
    return v;
  }

  // `known_title`: the entry's title under these variables and name, if made already.
  std::string instantiate(const RawEntry& e, const std::string& qualified, const std::vector<std::string>& inputs,
                          const NameScope& scope, const VarScope& vars, Inherited inherited, const Instance* instance,
                          const std::string* known_title = nullptr) {
    const std::string who = known_title ? *known_title : title(e, qualified, vars);
    const std::optional<Named> block = block_of(e, vars, who);
    if (e.trainable) inherited.trainable = evaluate_bool(*e.trainable, vars, who, "'trainable'") && inherited.trainable;
    if (e.functional) inherited.functional = evaluate_bool(*e.functional, vars, who, "'functional'") || inherited.functional;
    if (block && (e.share || !e.ties.empty()))
      fail(e.share ? e.share->loc : e.ties.front().first.loc,
           who + ": 'share' and 'tie' apply to a layer, not to a block instance");
    if (e.checkpoint && evaluate_bool(*e.checkpoint, vars, who, "'checkpoint'")) {
      if (!inherited.checkpoint.empty())
        fail(e.checkpoint->loc, who + ": 'checkpoint: true' inside '" + inherited.checkpoint + "', checkpointed at line " +
                                    std::to_string(inherited.checkpoint_loc.line) + "; checkpointed segments do not nest");
      inherited.checkpoint = qualified;
      inherited.checkpoint_loc = e.checkpoint->loc;
    }
    if (stack_.empty()) {  // a top-level entry (or one of its `repeat` instances)
      inherited.unit = qualified;
      inherited.unit_is_block = block.has_value();
    }
    if (block) return instantiate_block(e, *block, qualified, who, inputs, scope, vars, inherited);
    return make_layer(e, qualified, who, inputs, scope, vars, inherited, instance);
  }

  // The block an entry instantiates: `block: NAME`, or a `type: $expression` whose value names a
  // block (a block parameter choosing between a block and another, as YOLO11's C3k2 its units).
  [[gnu::noinline]] std::optional<Named> block_of(const RawEntry& e, const VarScope& vars, const std::string& who) const {
    if (e.block || !e.type || !e.type->expression) return e.block;
    const Value type = evaluate(*e.type, vars, who, "type");
    if (type.kind != Value::Kind::String || !blocks_.count(type.text)) return std::nullopt;
    return Named{type.text, e.type->loc};
  }

  // A layer entry made into a LayerSpec. Not inlined into instantiate(), which recurses once per
  // level of nested blocks: its locals would sit in every level's frame (500 levels overflowed
  // the stack under AddressSanitizer, whose frames are larger).
  [[gnu::noinline]] std::string make_layer(const RawEntry& e, const std::string& qualified, const std::string& who,
                                           const std::vector<std::string>& inputs, const NameScope& scope,
                                           const VarScope& vars, const Inherited& inherited, const Instance* instance) {
    budget_.spend_layers(instance && e.repeat ? e.repeat->loc : e.loc, 1);  // a repeated layer: at its repeat
    budget_.spend_name(instance && e.repeat ? e.repeat->loc : e.loc, qualified);
    LayerSpec layer;
    layer.name = qualified;
    const Value type = evaluate(*e.type, vars, who, "type");
    if (type.kind != Value::Kind::String)
      fail(e.type->loc, who + ": 'type' must be a layer type name, found " + type.describe());
    layer.type = type.text;
    layer.type_loc = e.type->loc;
    layer.loc = e.loc;
    layer.inputs = inputs;
    if (e.inputs)
      for (const auto& ref : *e.inputs) layer.input_locs.push_back(ref.loc);
    layer.input_locs.resize(inputs.size(), e.loc);
    layer.trainable = inherited.trainable;
    layer.functional = inherited.functional;
    resolve_sharing(e, scope, vars, who, layer);
    if (!inherited.checkpoint.empty()) {
      LayerLinks& links = layer.edit_links();
      links.checkpoint = inherited.checkpoint;
      links.checkpoint_loc = inherited.checkpoint_loc;
    }
    layer.unit = inherited.unit;
    layer.unit_is_block = inherited.unit_is_block;
    budget_.spend_values(e.loc, static_cast<std::int64_t>(inputs.size()));
    for (const auto& a : e.attrs) {
      layer.attrs.push_back({a.name, evaluate(a.value, vars, who, a.name), a.key_loc});
      budget_.spend_values(a.key_loc, layer.attrs.back().value);
    }
    claim(qualified, e.name ? e.name->loc : e.loc, static_cast<std::ptrdiff_t>(spec_->layers.size()), who, instance);
    spec_->layers.push_back(std::move(layer));
    return qualified;
  }

  std::string instantiate_block(const RawEntry& e, const Named& ref, const std::string& qualified, const std::string& who,
                                const std::vector<std::string>& inputs, const NameScope& scope, const VarScope& vars,
                                Inherited inherited) {
    const auto found = blocks_.find(ref.name);
    if (found == blocks_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, b] : blocks_) names.push_back(n);
      fail(ref.loc, who + ": no block named '" + ref.name + "'" + suggestion(ref.name, names));
    }
    const RawBlock& block = *found->second;
    if (std::find(stack_.begin(), stack_.end(), block.name) != stack_.end()) {
      std::string chain;
      for (const auto& s : stack_) chain += s + " -> ";
      fail(ref.loc, "block '" + block.name + "' instantiates itself (" + chain + block.name + ")");
    }
    if (stack_.size() >= kMaxBlockDepth)
      budget_.limit_reached(ref.loc, "expanding this nests blocks more than " +
                                              std::to_string(kMaxBlockDepth) + " levels deep, the limit");
    if (inputs.size() != block.inputs.size()) {
      std::string names;
      for (const auto& in : block.inputs) names += (names.empty() ? "" : ", ") + in.name;
      fail(e.loc, who + ": takes " + std::to_string(block.inputs.size()) + " input(s) (" + names + "), found " +
                      std::to_string(inputs.size()));
    }

    const VarScope params = block_arguments(block, e, vars, globals_, who, budget_);

    NameScope inner;
    inner.prefix = qualified + ".";
    inner.owner = "block '" + block.name + "'";
    inner.outer = &scope;
    std::vector<std::string> until_return;  // `held_until: caller` in the blocks this one calls
    inner.until_return = &until_return;
    inner.by_caller = scope.until_return;
    inner.by_model = scope.by_model;
    for (std::size_t i = 0; i < inputs.size(); ++i) inner.bound[block.inputs[i].name] = inputs[i];
    inner.previous = inputs[0];
    add_registrations(block.registers, qualified, spec_->registrations);
    add_modules(block.modules, qualified, spec_->unnamed_modules);
    const std::size_t first = spec_->layers.size();
    stack_.push_back(block.name);
    expand_list(block.layers, inner, params, inherited);
    stack_.pop_back();
    // Its caller holds the arguments until it returns; its variables go as it returns.
    for (const std::string& in : inputs) refer(in);
    for (const auto& [var, value] : inner.vars) refer(value);
    for (const std::string& value : until_return) refer(value);
    std::string output = block.output ? inner.resolve(*block.output, nullptr, "") : *inner.previous;
    if (block.cls) spec_->classed_blocks.push_back({block.cls->name, qualified, first, spec_->layers.size(), output, block.cls->loc});
    return output;
  }

  const RawSpec& raw_;
  const LoadOptions& options_;
  ExpansionBudget budget_;
  std::map<std::string, const RawBlock*> blocks_;
  VarScope globals_;
  ModuleScope modules_;  // `scope:`
  std::map<std::string, RawValue> input_shapes_;  // --input overrides
  TakenNames taken_;
  std::vector<std::string> stack_;       // blocks being instantiated, outermost first
  ModelSpec* spec_ = nullptr;
};

}  // namespace

ModelSpec expand(const RawSpec& spec, const LoadOptions& options) { return Expander(spec, options).run(); }

}  // namespace nnmem::raw
