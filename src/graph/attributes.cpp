// Attribute schemas: builders for rules, the one-line descriptions shown by `nnmem layers`, and
// the checks that turn a spec's attributes into typed, validated Attrs (or a located error).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "nnmem/layer.hpp"

namespace nnmem {

namespace {
Value int_value(std::int64_t v) {
  Value out;
  out.kind = Value::Kind::Int;
  out.integer = v;
  return out;
}
}  // namespace

// --- builders --------------------------------------------------------------------------------

AttrDef AttrDef::integer(std::string name, std::string help) {
  AttrDef d;
  d.name = std::move(name);
  d.kind = AttrKind::Int;
  d.help = std::move(help);
  return d;
}
AttrDef AttrDef::real(std::string name, std::string help) {
  AttrDef d = integer(std::move(name), std::move(help));
  d.kind = AttrKind::Float;
  return d;
}
AttrDef AttrDef::flag(std::string name, bool fallback, std::string help) {
  AttrDef d = integer(std::move(name), std::move(help));
  d.kind = AttrKind::Bool;
  d.fallback.kind = Value::Kind::Bool;
  d.fallback.boolean = fallback;
  return d;
}
AttrDef AttrDef::word(std::string name, std::vector<std::string> words, std::string help) {
  AttrDef d = integer(std::move(name), std::move(help));
  d.kind = AttrKind::String;
  d.fallback.kind = Value::Kind::String;
  d.fallback.text = words.front();
  d.words = std::move(words);
  return d;
}
AttrDef AttrDef::tuple(std::string name, int rank, std::string help) {
  AttrDef d = integer(std::move(name), std::move(help));
  d.kind = AttrKind::IntTuple;
  d.rank = rank;
  return d;
}
AttrDef AttrDef::list(std::string name, std::string help) {
  AttrDef d = integer(std::move(name), std::move(help));
  d.kind = AttrKind::IntList;
  return d;
}
AttrDef AttrDef::reals(std::string name, std::string help) {
  AttrDef d = real(std::move(name), std::move(help));
  d.kind = AttrKind::FloatTuple;
  return d;
}
AttrDef&& AttrDef::or_int() && { int_is_list = true; return std::move(*this); }
AttrDef&& AttrDef::needed() && { required = true; fallback = Value{}; return std::move(*this); }
AttrDef&& AttrDef::optional() && { nullable = true; fallback = Value{}; return std::move(*this); }
AttrDef&& AttrDef::or_else(std::int64_t v) && { fallback = int_value(v); return std::move(*this); }
AttrDef&& AttrDef::or_else_real(double v) && {
  fallback.kind = Value::Kind::Float;
  fallback.real = v;
  return std::move(*this);
}
AttrDef&& AttrDef::or_else_word(std::string v) && {
  fallback.kind = Value::Kind::String;
  fallback.text = std::move(v);
  return std::move(*this);
}
AttrDef&& AttrDef::at_least(std::int64_t v) && { min = v; return std::move(*this); }
AttrDef&& AttrDef::between(double lo, double hi) && { min_real = lo; max_real = hi; return std::move(*this); }
AttrDef&& AttrDef::or_words(std::vector<std::string> w) && { words = std::move(w); return std::move(*this); }

std::string AttrDef::describe() const {
  std::ostringstream os;
  switch (kind) {
    case AttrKind::Int: os << "int"; break;
    case AttrKind::Float: os << "float"; break;
    case AttrKind::Bool: os << "bool"; break;
    case AttrKind::String: os << "string"; break;
    case AttrKind::IntTuple: os << "int or list of " << (rank > 0 ? std::to_string(rank) + " ints" : "ints"); break;
    case AttrKind::IntList: os << (int_is_list ? "int or list of ints" : "list of ints"); break;
    case AttrKind::FloatTuple: os << "float or list of floats"; break;
  }
  if ((kind == AttrKind::Int || kind == AttrKind::IntTuple || kind == AttrKind::IntList) &&
      min != std::numeric_limits<std::int64_t>::min())
    os << " >= " << min;
  if ((kind == AttrKind::Float || kind == AttrKind::FloatTuple) && (min_real > -1e300 || max_real < 1e300))
    os << " in [" << min_real << ", " << max_real << "]";
  if (!words.empty()) {
    os << (kind == AttrKind::String ? ": " : ", or ");
    for (std::size_t i = 0; i < words.size(); ++i) os << (i ? " | " : "") << words[i];
  }
  if (required) os << "; required";
  else if (fallback.kind != Value::Kind::Null) os << "; default " << fallback.str();
  else os << "; optional";
  return os.str();
}

// --- validation ------------------------------------------------------------------------------

namespace {

[[noreturn]] void bad(const LayerSpec& layer, const SourceLoc& at, const std::string& message) {
  throw Error(at, layer.title() + ": " + message);
}

void check_int(const LayerSpec& layer, const AttrDef& def, const Value& v, const std::string& what) {
  if (v.kind != Value::Kind::Int) bad(layer, v.loc, what + " must be an integer, found " + v.describe());
  if (v.integer < def.min)
    bad(layer, v.loc, what + " must be at least " + std::to_string(def.min) + ", found " + std::to_string(v.integer));
}

// `must`: "NAME must be a number", what to say when it is not one at all.
void check_real(const LayerSpec& layer, const AttrDef& def, const Value& v, const std::string& must) {
  if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Float) bad(layer, v.loc, must + ", found " + v.describe());
  const double x = v.kind == Value::Kind::Int ? static_cast<double>(v.integer) : v.real;
  // Written so that NaN (which compares false with everything) fails the check too.
  if (!(x >= def.min_real && x <= def.max_real)) {
    const bool low = std::isfinite(def.min_real), high = std::isfinite(def.max_real);
    std::ostringstream os;
    os << def.name;
    if (low && high) os << " must be between " << def.min_real << " and " << def.max_real;
    else if (low) os << " must be at least " << def.min_real;
    else if (high) os << " must be at most " << def.max_real;
    else os << " must be a number";
    os << ", found " << v.str();
    bad(layer, v.loc, os.str());
  }
}

void check_value(const LayerSpec& layer, const AttrDef& def, const Value& v) {
  const std::string& name = def.name;
  if (v.kind == Value::Kind::Null) {
    if (def.nullable) return;
    bad(layer, v.loc, name + " needs a value (" + def.describe() + ")");
  }
  switch (def.kind) {
    case AttrKind::Int:
      check_int(layer, def, v, name);
      return;
    case AttrKind::Float:
      check_real(layer, def, v, name + " must be a number");
      return;
    case AttrKind::FloatTuple:
      if (v.kind != Value::Kind::List) {
        check_real(layer, def, v, name + " must be a number or a list of numbers");
        return;
      }
      if (v.items.empty()) bad(layer, v.loc, name + " must be a number or a list of numbers, found " + v.describe());
      for (const auto& item : v.items) check_real(layer, def, item, name + " must be a number or a list of numbers");
      return;
    case AttrKind::Bool:
      if (v.kind != Value::Kind::Bool) bad(layer, v.loc, name + " must be true or false, found " + v.describe());
      return;
    case AttrKind::String:
    case AttrKind::IntTuple:
      if (v.kind == Value::Kind::String || def.kind == AttrKind::String) {
        if (v.kind == Value::Kind::String && std::find(def.words.begin(), def.words.end(), v.text) != def.words.end())
          return;
        std::string expected;
        for (std::size_t i = 0; i < def.words.size(); ++i) expected += (i ? ", " : "") + def.words[i];
        if (def.kind == AttrKind::IntTuple)
          expected = "an integer or a list of " + std::to_string(def.rank) + " integers" +
                     (def.words.empty() ? "" : ", or one of " + expected);
        else
          expected = "one of " + expected;
        std::string msg = name + " must be " + expected + "; found " + v.describe();
        if (v.kind == Value::Kind::String)
          if (auto near = nearest_name(v.text, def.words); !near.empty()) msg += " (did you mean '" + near + "'?)";
        bad(layer, v.loc, msg);
      }
      if (v.kind == Value::Kind::Int) {
        check_int(layer, def, v, name);
        return;
      }
      // rank 0: one value per spatial dimension of an input whose rank the schema cannot know.
      if (v.kind != Value::Kind::List || (def.rank > 0 ? static_cast<int>(v.items.size()) != def.rank : v.items.empty()))
        bad(layer, v.loc, name + " must be an integer or a list of " +
                              (def.rank > 0 ? std::to_string(def.rank) + " integers" : "integers") + ", found " + v.describe());
      for (const auto& item : v.items) check_int(layer, def, item, name);
      return;
    case AttrKind::IntList:
      if (def.int_is_list && v.kind == Value::Kind::Int) return check_int(layer, def, v, name);
      if (v.kind != Value::Kind::List) bad(layer, v.loc, name + " must be a list of integers, found " + v.describe());
      for (const auto& item : v.items) check_int(layer, def, item, name);
      return;
  }
}

}  // namespace

Attrs::Attrs(const std::vector<AttrDef>& defs, const LayerSpec& layer) : defs_(&defs), values_(defs.size(), nullptr) {
  for (const auto& attr : layer.attrs) {
    const auto it = std::find_if(defs.begin(), defs.end(), [&](const AttrDef& d) { return d.name == attr.name; });
    if (it == defs.end()) {
      std::vector<std::string> names;
      for (const auto& d : defs) names.push_back(d.name);
      std::string msg = "unknown attribute '" + attr.name + "'";
      if (auto near = nearest_name(attr.name, names); !near.empty()) msg += "; did you mean '" + near + "'?";
      else if (names.empty()) msg += "; " + layer.type + " takes no attributes";
      else {
        msg += "; " + layer.type + " takes:";
        for (const auto& n : names) msg += " " + n;
      }
      bad(layer, attr.key_loc, msg);
    }
    const std::size_t i = static_cast<std::size_t>(it - defs.begin());
    check_value(layer, defs[i], attr.value);
    values_[i] = &attr.value;
  }
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (values_[i]) continue;
    if (defs[i].required) bad(layer, layer.loc, "needs attribute '" + defs[i].name + "' (" + defs[i].describe() + ")");
    values_[i] = &defs[i].fallback;
  }
}

const AttrDef& Attrs::def(std::string_view name) const {
  for (const auto& d : *defs_)
    if (d.name == name) return d;
  throw std::logic_error("layer rule asked for undeclared attribute '" + std::string(name) + "'");
}

const Value& Attrs::value(std::string_view name) const {
  for (std::size_t i = 0; i < defs_->size(); ++i)
    if ((*defs_)[i].name == name) return *values_[i];
  def(name);  // throws
  throw std::logic_error("unreachable");
}

std::int64_t Attrs::integer(std::string_view name) const { return value(name).integer; }
double Attrs::real(std::string_view name) const {
  const Value& v = value(name);
  return v.kind == Value::Kind::Int ? static_cast<double>(v.integer) : v.real;
}
bool Attrs::flag(std::string_view name) const { return value(name).boolean; }
const std::string& Attrs::text(std::string_view name) const { return value(name).text; }
bool Attrs::given(std::string_view name) const { return value(name).kind != Value::Kind::Null; }
bool Attrs::is(std::string_view name, std::string_view word) const {
  const Value& v = value(name);
  return v.kind == Value::Kind::String && v.text == word;
}

Shape Attrs::tuple(std::string_view name) const {
  const Value& v = value(name);
  if (v.kind == Value::Kind::Int) return Shape(static_cast<std::size_t>(std::max(def(name).rank, 1)), v.integer);
  return list(name);
}

std::vector<double> Attrs::reals(std::string_view name) const {
  const Value& v = value(name);
  const auto number = [](const Value& x) { return x.kind == Value::Kind::Int ? static_cast<double>(x.integer) : x.real; };
  if (v.kind != Value::Kind::List) return {number(v)};
  std::vector<double> out;
  for (const auto& item : v.items) out.push_back(number(item));
  return out;
}

Shape Attrs::list(std::string_view name) const {
  const Value& v = value(name);
  if (v.kind == Value::Kind::Int) return {v.integer};
  Shape out;
  for (const auto& item : v.items) out.push_back(item.integer);
  return out;
}

// --- the rest of the rule interface ----------------------------------------------------------

bool LayerCall::any_input_requires_grad() const {
  return std::any_of(inputs.begin(), inputs.end(), [](const InputTensor& t) { return t.requires_grad; });
}

void LayerResult::save_input(int i, std::string what) { saved.push_back({Saved::Of::Input, i, {}, std::move(what)}); }
void LayerResult::save_output(int i, std::string what) { saved.push_back({Saved::Of::Output, i, {}, std::move(what)}); }
void LayerResult::save_param(int i, std::string what) { saved.push_back({Saved::Of::Param, i, {}, std::move(what)}); }
void LayerResult::save_extra(TensorType type, std::string what, Saved::Made made) {
  saved.push_back({Saved::Of::Extra, 0, std::move(type), std::move(what), made});
}
void LayerResult::save_wrapped_number(const Context& ctx, std::string what) {
  if (ctx.device != Device::Cpu) return;  // a CPU tensor: no device memory on a GPU
  saved.push_back({Saved::Of::Extra, 0, TensorType{{}, DType::Float64}, std::move(what), Saved::Made::Separate, true});
}

}  // namespace nnmem
