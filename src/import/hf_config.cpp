// config.json -> spec text: the family's template with its variables set to the config's values.
#include "nnmem/hf_config.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hf_families.hpp"

namespace nnmem {

namespace {

using hf::Kind;
using json = nlohmann::json;

// The largest config.json nnmem reads (real ones are a few kB; id2label can make tens of kB).
constexpr std::size_t kMaxConfigBytes = 16 << 20;

// "the string \"768\"", "the number 0.5", "null": what was found, for messages.
std::string found(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (v.is_null()) return "null";
  return std::string("the ") + (v.is_number() ? "number" : v.type_name()) + " " + text;
}

std::string expected(const hf::Field& f) {
  switch (f.kind) {
    case Kind::Size: return "a positive integer";
    case Kind::OptionalSize: return "a positive integer or null";
    case Kind::Index: return "an integer >= 0";
    case Kind::Number: return "a number >= 0";
    case Kind::Bool: return "true or false";
    case Kind::Word: break;
  }
  std::string words;
  for (const auto& w : f.words) words += (words.empty() ? "\"" : ", \"") + w + "\"";
  return "one of " + words + (f.words.size() == 1 ? " (the only value nnmem models)" : " (the values nnmem models)");
}

// The value as a spec writes it, or nullopt when it is not of the field's kind. Null (for an
// OptionalSize) gives "": the family decides.
std::optional<std::string> spec_value(const hf::Field& f, const json& v) {
  switch (f.kind) {
    case Kind::OptionalSize:
      if (v.is_null()) return std::string();
      [[fallthrough]];
    case Kind::Size:
    case Kind::Index:
      if (!v.is_number_integer() || v.get<std::int64_t>() < (f.kind == Kind::Index ? 0 : 1)) return std::nullopt;
      return std::to_string(v.get<std::int64_t>());
    case Kind::Number:
      if (!v.is_number() || v.get<double>() < 0) return std::nullopt;
      return v.is_number_integer() ? std::to_string(v.get<std::int64_t>()) : v.dump();
    case Kind::Bool:
      if (!v.is_boolean()) return std::nullopt;
      return std::string(v.get<bool>() ? "true" : "false");
    case Kind::Word:
      if (!v.is_string() || std::find(f.words.begin(), f.words.end(), v.get<std::string>()) == f.words.end()) return std::nullopt;
      return v.get<std::string>();
  }
  return std::nullopt;
}

std::string supported_list() {
  std::string out;
  for (const auto& line : supported_hf_models()) out += (out.empty() ? "" : "; ") + line;
  return out;
}

// A string member, or "" when absent; `what` names it in errors.
std::string string_member(const json_text::Document& doc, const std::string& key) {
  if (!doc.root.contains(key) || doc.root[key].is_null()) return {};
  const json& v = doc.root[key];
  if (!v.is_string()) throw Error(doc.value_loc(key), "'" + key + "': expected a string, found " + found(v));
  return v.get<std::string>();
}

const hf::Family& family_of(const json_text::Document& doc) {
  if (!doc.root.contains("model_type"))
    throw Error(doc.key_loc("model_type"), "missing field 'model_type', which says which family the config is; supported: " +
                                               supported_list());
  const std::string type = string_member(doc, "model_type");
  for (const auto& f : hf::families())
    if (f.model_type == type) return f;
  throw Error(doc.value_loc("model_type"), "model_type '" + type + "' is not supported; supported: " + supported_list());
}

const hf::Head& head_of(const json_text::Document& doc, const hf::Family& family, const std::string& requested) {
  std::string name = requested;
  SourceLoc at = doc.key_loc("architectures");
  if (name.empty()) {
    if (!doc.root.contains("architectures"))
      throw Error(at, "missing field 'architectures', the model class (as [\"" + family.heads.front().name +
                          "\"]); --architecture gives it");
    const json& v = doc.root["architectures"];
    if (!v.is_array() || v.empty() || !v[0].is_string())
      throw Error(doc.value_loc("architectures"), "'architectures': expected a list of model class names, found " + found(v));
    name = v[0].get<std::string>();
    at = doc.value_loc("architectures");
  }
  std::string classes;
  for (const auto& h : family.heads) {
    if (h.name == name) return h;
    classes += (classes.empty() ? "" : ", ") + h.name;
  }
  throw Error(at, "model class '" + name + "' of model_type '" + family.model_type + "' is not supported; supported: " + classes);
}

// The template with its leading comment replaced by `header`, its variables set, its loss set.
std::string compose(std::string_view tmpl, const std::string& name, const std::string& header, const hf::Translation& t, const std::string& loss) {
  std::istringstream in{std::string(tmpl)};
  std::ostringstream out;
  out << header;
  std::set<std::string> done;
  bool leading = true, in_variables = false, has_loss = false;
  for (std::string line; std::getline(in, line);) {
    if (leading && line.rfind('#', 0) == 0) continue;
    leading = false;
    if (!line.empty() && line[0] != ' ' && line[0] != '#') in_variables = line == "variables:";
    const std::size_t colon = line.find(':');
    if (in_variables && line.rfind("  ", 0) == 0 && line[2] != ' ' && line[2] != '#' && colon != std::string::npos) {
      const std::string name = line.substr(2, colon - 2);
      const auto it = t.variables.find(name);
      if (it != t.variables.end()) {
        line = "  " + name + ": " + it->second;
        done.insert(name);
      }
    }
    if (line.rfind("name:", 0) == 0) line = "name: " + name;
    if (line.rfind("loss:", 0) == 0) {
      has_loss = true;
      if (!loss.empty()) line = "loss: " + loss;
    }
    out << line << '\n';
  }
  if (!has_loss && !loss.empty()) out << "loss: " << loss << '\n';
  for (const auto& [name, value] : t.variables)
    if (!done.count(name)) throw std::logic_error("the template has no variable '" + name + "' to set");
  return out.str();
}

}  // namespace

bool is_hf_config(const std::string& path) { return path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0; }

std::vector<std::string> supported_hf_models() {
  std::vector<std::string> out;
  for (const auto& f : hf::families()) {
    std::string classes;
    for (const auto& h : f.heads) classes += (classes.empty() ? "" : ", ") + h.name;
    out.push_back(f.model_type + " (" + classes + ")");
  }
  return out;
}

ImportedSpec import_hf_config_text(const std::string& text, const std::string& file, const std::string& architecture) {
  const json_text::Document doc = json_text::parse(text, file);
  const hf::Family& family = family_of(doc);
  const hf::Head& head = head_of(doc, family, architecture);

  hf::Translation t;
  for (const auto& field : family.fields) {
    const bool given = doc.root.contains(field.key);
    if (!given && field.fallback.empty())
      throw Error(doc.key_loc(field.key), "missing field '" + field.key + "' (" + expected(field) + "), which model_type '" +
                                              family.model_type + "' needs: nnmem does not guess a model's size");
    const json v = given ? doc.root[field.key] : field.kind == Kind::Word ? json(field.fallback) : json::parse(field.fallback);
    const auto value = spec_value(field, v);
    if (!value)
      throw Error(doc.value_loc(field.key), "'" + field.key + "': expected " + expected(field) + ", found " + found(v));
    if (field.variable && !value->empty()) t.variables[field.key] = *value;
  }
  for (const auto& [name, value] : head.sets) t.variables[name] = value;
  if (family.finish) family.finish(doc, t);

  ImportedSpec out;
  out.model_type = family.model_type;
  out.architecture = head.name;
  out.storage_dtype = string_member(doc, doc.root.contains("torch_dtype") ? "torch_dtype" : "dtype");
  out.notes = t.notes;
  if (!out.storage_dtype.empty())
    out.notes.push_back("torch_dtype " + out.storage_dtype + " is the dtype the checkpoint is stored in; the step is "
                        "estimated in the spec's dtype (float32 unless --dtype says otherwise)");
  std::string header = "# " + family.model_type + " as transformers' " + head.name + " builds it (attn_implementation \"sdpa\"),\n"
                       "# imported by nnmem from " + file + ". The variables are the config's keys; seq_len is\n"
                       "# the longest sequence the config allows (--set seq_len=N for another), the batch comes from --batch.\n";
  for (const auto& note : out.notes) header += "# Note: " + note + ".\n";
  out.text = compose(hf::template_text(family.template_name), family.model_type, header, t, head.loss);
  return out;
}

ImportedSpec import_hf_config(const std::string& path, const std::string& architecture) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "cannot open the file");
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    throw Error({path, 0, 0}, "the file is larger than " + with_commas(kMaxConfigBytes) + " bytes; a config.json is a few kB");
  return import_hf_config_text(text, path, architecture);
}

}  // namespace nnmem
