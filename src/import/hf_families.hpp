// The Hugging Face families nnmem translates: for each model_type, its template (an example
// spec), the config keys that change a shape, a count or the step (with the config class's
// default when the key is absent), and the model classes it builds.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json_text.hpp"

namespace nnmem::hf {

enum class Kind {
  Size,          // an integer >= 1
  OptionalSize,  // an integer >= 1, or null (then the family's rule decides)
  Index,         // an integer >= 0
  Number,        // a number >= 0 (an epsilon, a dropout probability)
  Bool,
  Word,          // a string, one of `words`
};

struct Field {
  std::string key;
  Kind kind;
  std::string fallback;            // the config class's default, as the spec writes it; "" = required
  std::vector<std::string> words;  // Word: the values supported
  bool variable = true;            // false: checked (an activation), not a template variable
};

/// A model class: the template variables it sets and its loss ("" = the template's).
struct Head {
  std::string name;
  std::vector<std::pair<std::string, std::string>> sets;
  std::string loss;
};

/// What a translation has so far: the template's variables to set, and notes for the user.
struct Translation {
  std::map<std::string, std::string> variables;
  std::vector<std::string> notes;
};

struct Family {
  std::string model_type;
  std::string template_name;
  std::vector<Field> fields;
  std::vector<Head> heads;
  /// The family's own rules, after the fields are read: nulls resolved, seq_len, notes.
  void (*finish)(const json_text::Document& doc, Translation& t) = nullptr;
};

/// Every supported family, in the order the errors list them.
const std::vector<Family>& families();

/// A template's text (the example spec it was made from), or empty for an unknown name.
std::string_view template_text(std::string_view name);

}  // namespace nnmem::hf
