#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "nnmem/spec.hpp"
#include "raw_spec.hpp"
#include "source_text.hpp"

namespace nnmem {

std::string Value::str() const {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return boolean ? "true" : "false";
    case Kind::Int: return std::to_string(integer);
    case Kind::Float: {
      if (std::isnan(real)) return "nan";  // not "-nan": the sign of a NaN means nothing here
      std::ostringstream os;
      os << real;
      return os.str();
    }
    case Kind::String: return text;
    case Kind::List: {
      std::string s = "[";
      for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].str();
      return s + "]";
    }
    case Kind::Map: return "{…}";
  }
  return {};
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return std::string("the boolean ") + (boolean ? "true" : "false");
    case Kind::Int: return "the integer " + std::to_string(integer);
    case Kind::Float: return "the number " + str();
    case Kind::String: return "the string '" + text + "'";
    case Kind::List: {
      const std::string text = str();  // a machine-written list can be huge: count it instead
      return text.size() <= 80 ? "the list " + text : "a list of " + std::to_string(items.size()) + " values";
    }
    case Kind::Map: return "a mapping";
  }
  return {};
}

namespace {

enum class NumberForm { None, Integer, Real };

// YAML 1.2 core schema numbers: [-+]?[0-9]+ is an integer; [-+]?(digits[.digits]|.digits)
// with an optional exponent is a real. A hand-written scan: this runs for every scalar.
NumberForm number_form(std::string_view s) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t whole = digits();
  bool real = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (whole + digits() == 0) return NumberForm::None;
    real = true;
  } else if (whole == 0) {
    return NumberForm::None;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return NumberForm::None;
    real = true;
  }
  if (i != s.size()) return NumberForm::None;
  return real ? NumberForm::Real : NumberForm::Integer;
}

}  // namespace

Value parse_literal(const std::string& s, const SourceLoc& loc) {
  const NumberForm form = number_form(s);
  Value v;
  v.loc = loc;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return v;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    v.kind = Value::Kind::Bool;
    v.boolean = s[0] == 't' || s[0] == 'T';
  } else if (form == NumberForm::Integer) {
    errno = 0;
    const long long i = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE) throw Error(loc, "the integer " + s + " does not fit in 64 bits");
    v.kind = Value::Kind::Int;
    v.integer = i;
  } else if (form == NumberForm::Real) {
    v.kind = Value::Kind::Float;
    v.real = std::strtod(s.c_str(), nullptr);
    if (!std::isfinite(v.real)) throw Error(loc, "the number " + s + " is too large");
  } else {
    v.kind = Value::Kind::String;
    v.text = s;
  }
  return v;
}

const Attribute* LayerSpec::find_attr(std::string_view attr) const {
  for (const auto& a : attrs)
    if (a.name == attr) return &a;
  return nullptr;
}

const LayerLinks& LayerSpec::links() const {
  static const LayerLinks none;
  return linked ? *linked : none;
}

// The two stages of loading: the YAML reader (loader.cpp, extends.cpp) and the expander (expand.cpp).
ModelSpec parse_spec(const std::string& text, const std::string& file, const LoadOptions& options) {
  return raw::expand(raw::read_extended(text, file, options), options);
}

ModelSpec load_spec_file(const std::string& path, const LoadOptions& options) {
  return parse_spec(raw::read_spec_file(path, options.max_file_bytes), path, options);
}

}  // namespace nnmem
