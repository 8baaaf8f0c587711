// YAML document -> RawSpec. With loader_stream.cpp (text -> one YAML document) and
// loader_nodes.cpp (one node: what it is, what its tag makes it), the only code that includes
// yaml-cpp: it checks the document's structure (which keys exist, which are maps or lists) and
// keeps every position; meaning is given later by expand.cpp (names, blocks) and the graph
// (attribute types, shapes). Bytes, encodings and character columns are source_text.cpp's
// business.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "loader_nodes.hpp"
#include "loader_stream.hpp"
#include "raw_spec.hpp"
#include "source_text.hpp"

namespace nnmem {
namespace raw {
namespace {

const std::vector<std::string> kTopLevelKeys = {"nnmem",  "name",   "description", "dtype",   "variables", "inputs",
                                                "blocks", "layers", "outputs",     "loss",    "extends", "register"};
const std::vector<std::string> kBlockKeys = {"params", "inputs", "output", "layers", "register", "description"};
const std::vector<std::string> kInputKeys = {"shape", "dtype"};

// A word such as a layer type's name: a letter, then letters, digits and underscores.
bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

class Reader {
 public:
  // Without aliases each value node is at least one character of the file; the slack lets a
  // small file reuse anchored values freely.
  Reader(const SourceText& source, std::size_t text_bytes, const AliasItems& alias_items)
      : src_(source), alias_items_(alias_items), values_left_(static_cast<std::int64_t>(text_bytes) + kAliasSlack) {}

  SourceLoc loc(const YAML::Node& node, const SourceLoc& fallback) const {
    const YAML::Mark m = node.Mark();
    if (m.is_null() || node.IsNull()) return fallback;
    return src_.loc(m.line, m.column);
  }

  [[noreturn]] void fail(const SourceLoc& at, const std::string& message) const { throw Error(at, message); }

  // Every node read passes here: its tag must be one nnmem gives a meaning, and fit the node
  // (errors prefixed with `who`). And yaml-cpp 0.7 runs a quoted string whose closing quote is
  // missing to the end of the file, swallowing the rest of the spec; say so where it opens.
  Tagged check_node(const YAML::Node& n, const SourceLoc& at, const std::string& who) const {
    if (n.IsScalar() && n.Tag() == "!") {
      const YAML::Mark m = n.Mark();
      if (const char quote = src_.unclosed_quote(m.line, m.column))
        fail(src_.loc(m.line, m.column), "invalid YAML: the string opened by this '" + std::string(1, quote) +
                                             "' is never closed");
    }
    return tag_of(n, at, who);
  }

  // Iterates a mapping, rejecting duplicate keys, keys that are not plain strings, and YAML
  // merge keys. `who` prefixes errors about a layer ("Conv2d 'conv1': ").
  template <typename F>
  void each_key(const YAML::Node& map, const SourceLoc& where, const std::string& what, F&& f,
                const std::string& who = {}) const {
    if (!map.IsMap()) fail(loc(map, where), what + " must be a mapping (key: value), found " + kind(map));
    std::map<std::string, SourceLoc> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      const SourceLoc key_loc = loc(key, where);
      check_node(key, key_loc, who);
      if (!key.IsScalar()) fail(key_loc, who + "keys in " + what + " must be names, found " + kind(key));
      const std::string name = key.Scalar();
      check_node(it->second, loc(it->second, key_loc), who + name + ": ");
      // yaml-cpp 0.7 does not merge: `<<` would arrive as an ordinary key holding a mapping.
      if (name == "<<" && key.Tag() == "?")
        fail(key_loc, std::string("YAML merge keys ('<<') are not supported; write ") +
                          (who.empty() ? "the mapping" : "the layer's attributes") + " out in full");
      if (auto [pos, fresh] = seen.emplace(name, key_loc); !fresh)
        fail(key_loc, who + "duplicate key '" + name + "'" + (who.empty() ? " in " + what : "") +
                          " (first given at line " + std::to_string(pos->second.line) + ")");
      f(name, it->second, key_loc);
    }
  }

  void check_known(const std::string& key, const SourceLoc& at, const std::vector<std::string>& known,
                   const std::string& where) const {
    for (const auto& k : known)
      if (k == key) return;
    std::string msg = "unknown key '" + key + "' in " + where;
    if (auto near = nearest_name(key, known); !near.empty()) msg += "; did you mean '" + near + "'?";
    else {
      msg += "; expected one of:";
      for (const auto& k : known) msg += " " + k;
    }
    fail(at, msg);
  }

  // A scalar beginning with `$` is an expression, quoted or not (quotes let an expression hold
  // YAML's own characters, as in "$index == 0 ? 2 : 1"); `$$` stands for a literal `$`.
  // `who` prefixes errors ("Linear 'fc1': out_features: ").
  // A tag says what the scalar is: `!!str 3` is the string "3", `!!float 3` the number 3.0.
  RawValue scalar_or_expr(const YAML::Node& node, const SourceLoc& at, const std::string& who) const {
    const Tagged tag = check_node(node, at, who);
    RawValue r;
    r.loc = at;
    r.literal.loc = at;
    if (node.IsNull() || tag == Tagged::Null) return r;
    const std::string& s = node.Scalar();
    const bool textual = tag == Tagged::Plain || tag == Tagged::String;
    if (textual && !s.empty() && s[0] == '$' && s.rfind("$$", 0) != 0) {
      set_expression(r, s.substr(1));
    } else if (tag == Tagged::String) {  // quoted or !!str: always a string
      r.literal.kind = Value::Kind::String;
      r.literal.text = s[0] == '$' ? s.substr(1) : s;
    } else {
      try {
        r.literal = parse_literal(s[0] == '$' && textual ? s.substr(1) : s, at);
      } catch (const Error& e) {
        fail(e.loc(), who + e.message());
      }
      if (tag == Tagged::Float && r.literal.kind == Value::Kind::Int) {
        r.literal.kind = Value::Kind::Float;
        r.literal.real = static_cast<double>(r.literal.integer);
      }
    }
    return r;
  }

  // A scalar, a list (of values or lists), or a mapping (its contents dropped).
  RawValue value(const YAML::Node& node, const SourceLoc& fallback, const std::string& who = {}) {
    return copy_value(node, fallback, who, fallback, 1);
  }

  // yaml-cpp shares an aliased node, but a RawValue copies it at every use, so aliases are
  // bounded twice over here. Nine levels of nine aliases (the "billion laughs") under an
  // attribute, a block parameter or an input shape were copied into 9^9 values, gigabytes
  // before any check could see them (tests/fuzz/regressions/alias_bomb_attribute.yaml): the
  // copies are counted. And an anchored list that holds its own alias (&a [*a]) is a cycle,
  // which recursed until the stack ran out (alias_cycle.yaml): the depth is bounded as yaml-cpp
  // bounds the text's. Errors are placed at the key, where the value is used: an aliased node's
  // own position is its anchor's.
  RawValue copy_value(const YAML::Node& node, const SourceLoc& fallback, const std::string& who,
                      const SourceLoc& used_at, int depth) {
    if (--values_left_ < 0)
      fail(used_at, who + "YAML aliases (*name) expand this value into more values than the file has characters; "
                          "write it out instead");
    if (depth > kMaxValueDepth)
      fail(used_at, who + "YAML aliases (*name) nest this value more than " + std::to_string(kMaxValueDepth) +
                        " levels deep; does an anchored list hold its own alias?");
    const SourceLoc at = loc(node, fallback);
    if (!node.IsSequence() && !node.IsMap()) return scalar_or_expr(node, at, who);
    check_node(node, at, who);
    RawValue r;
    r.loc = at;
    r.is_map = node.IsMap();
    r.is_list = node.IsSequence();
    if (r.is_list)
      for (const auto& item : node) r.items.push_back(copy_value(item, at, who, used_at, depth + 1));
    return r;
  }

  Named name(const YAML::Node& node, const SourceLoc& fallback, const std::string& what) const {
    const SourceLoc at = loc(node, fallback);
    check_node(node, at, what + ": ");
    if (!node.IsScalar() || node.Scalar().empty())
      fail(at, what + " must be a non-empty name, found " + kind(node));
    return {node.Scalar(), at};
  }

  // `allow_empty`: a layer's `inputs: []` (a Parameter, a constant) reads nothing.
  std::vector<Named> names(const YAML::Node& node, const SourceLoc& fallback, const std::string& what,
                           bool allow_empty = false) const {
    std::vector<Named> out;
    if (node.IsSequence()) {
      for (const auto& item : node) out.push_back(name(item, loc(node, fallback), what));
      if (out.empty() && !allow_empty) fail(loc(node, fallback), what + " must name at least one value");
    } else {
      out.push_back(name(node, fallback, what));
    }
    return out;
  }

  // `loss: TYPE`; `loss: {type: TYPE, OPTION: value, …}`; or a list of terms {output: NAME,
  // type: TYPE, weight: W, when: COND, OPTION: value, …}. Options (label_smoothing) are checked
  // against the loss's by the memory stage, which knows them.
  std::vector<RawLoss> losses(const YAML::Node& node, const SourceLoc& at) {
    if (!node.IsSequence() && !node.IsMap()) return {RawLoss{at, std::nullopt, value(node, at, "loss: "), std::nullopt, std::nullopt, {}}};
    std::vector<RawLoss> out;
    std::vector<YAML::Node> items;
    if (node.IsMap()) items.push_back(node);  // one term written without its list
    else
      for (const auto& item : node) items.push_back(item);
    for (const auto& item : items) {
      RawLoss l;
      l.loc = loc(item, at);
      each_key(item, l.loc, "a loss (such as {output: logits, type: cross_entropy, weight: 1})",
               [&](const std::string& key, const YAML::Node& v, const SourceLoc& k) {
                 std::optional<RawValue>* slot = key == "output" ? &l.output : key == "type" ? &l.kind
                                                 : key == "weight" ? &l.weight : key == "when" ? &l.when : nullptr;
                 if (slot) *slot = value(v, k, "loss: " + key + ": ");
                 else if (static const std::vector<std::string> terms = {"output", "type", "weight", "when"};
                          !nearest_name(key, terms).empty())
                   check_known(key, k, terms, "a loss");  // a misspelt term key ('wieght')
                 else l.attrs.push_back({key, k, value(v, k, "loss: " + key + ": ")});
               });
      if (!l.kind) fail(l.loc, "a loss needs 'type' (e.g. {type: cross_entropy, label_smoothing: 0.1})");
      if (!l.output && node.IsSequence()) fail(l.loc, "a loss in a list needs 'output' (the value it reads)");
      out.push_back(std::move(l));
    }
    if (out.empty()) fail(at, "'loss' is an empty list; omit it for the default (mean)");
    return out;
  }

  // How errors found while reading a layer name it, before its name and type are validated:
  // "Conv2d 'conv1'", "Residual 'res'" (a block instance), "layer 'fc1'" while its type is not
  // a plain name; " in block 'Down'" for a layer of a block's definition. Unnamed layers are
  // named by their position, as expand.cpp names them.
  std::string entry_title(const YAML::Node& node, std::size_t index, const std::string& block) const {
    std::string name = std::to_string(index), type = "layer";
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar() || !it->second.IsScalar() || it->second.Scalar().empty()) continue;
      const std::string& key = it->first.Scalar();
      const std::string& text = it->second.Scalar();
      if (key == "name") name = text;
      if ((key == "type" || (key == "block" && type == "layer")) && text[0] != '$') type = text;
    }
    return type + " '" + name + "'" + (block.empty() ? "" : " in block '" + block + "'");
  }

  RawEntry entry(const YAML::Node& node, const SourceLoc& fallback, std::size_t index, const std::string& block) {
    RawEntry e;
    e.loc = loc(node, fallback);
    if (!node.IsMap()) {
      std::string msg = "each layer must be a mapping such as {type: Conv2d, out_channels: 64, ...}, found " + kind(node);
      // A bare word is most likely a type name written without its mapping (the graph checks it).
      if (node.IsScalar() && is_identifier(node.Scalar())) msg += " (did you mean {type: " + node.Scalar() + "}?)";
      fail(e.loc, msg);
    }
    const std::string who = entry_title(node, index, block) + ": ";
    check_node(node, e.loc, who);
    std::optional<SourceLoc> input_key;
    each_key(node, e.loc, "a layer", [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      if (key == "name") {
        e.name = name(v, key_loc, "a layer's name");
      } else if (key == "type") {
        e.type = value(v, key_loc, who + "type: ");
      } else if (key == "block") {
        e.block = name(v, key_loc, who + "block");
      } else if (key == "input" || key == "inputs") {
        if (input_key) fail(key_loc, who + "give either 'input' or 'inputs', not both");
        input_key = key_loc;
        e.inputs = names(v, key_loc, who + "'" + key + "'", true);
      } else if (key == "share") {
        e.share = name(v, key_loc, who + "'share'");
      } else if (key == "var") {
        e.var = name(v, key_loc, who + "'var'");
      } else if (key == "held_until") {
        e.held_until = name(v, key_loc, who + "'held_until'");
      } else if (key == "tie") {
        each_key(v, key_loc, who + "'tie'", [&](const std::string& param, const YAML::Node& target, const SourceLoc& k) {
          e.ties.emplace_back(Named{param, k}, value(target, k, who + "tie: " + param + ": "));
        }, who);
      } else if (key == "repeat" || key == "when" || key == "trainable" || key == "functional" || key == "checkpoint") {
        auto& field = key == "repeat" ? e.repeat : key == "when" ? e.when : key == "trainable" ? e.trainable
                      : key == "functional" ? e.functional : e.checkpoint;
        field = value(v, key_loc, who + "'" + key + "': ");
      } else {
        e.attrs.push_back({key, key_loc, value(v, key_loc, who + key + ": ")});
      }
    }, who);
    if (e.type && e.block)
      fail(e.block->loc, who + "give either 'type' (a layer type) or 'block' (a block name), not both");
    if (overrides_ && block.empty()) {  // an extending spec's layer changes the base's layer of its name
      if (!e.name) fail(e.loc, who + "an extending spec's layers override the base's by name; give this one a 'name'");
    } else if (!e.type && !e.block) {
      fail(e.loc, who + "has no 'type'; give a layer type (type: Conv2d) or a block (block: MyBlock)");
    }
    return e;
  }

  // A layer repeated through an alias (`- *conv`) stands where the alias is, though its node
  // (and every position inside) is the anchor's: errors about this occurrence, such as its
  // name being taken, point there.
  std::vector<RawEntry> entries(const YAML::Node& node, const SourceLoc& at, const std::string& what,
                                const std::string& block = {}) {
    if (!node.IsSequence())
      fail(loc(node, at), what + " must be a list of layers (- {type: ...}), found " + kind(node));
    std::vector<RawEntry> out;
    for (const auto& item : node) {
      out.push_back(entry(item, loc(node, at), out.size(), block));
      if (const auto alias = alias_items_.at(src_, node, out.size() - 1)) {
        out.back().loc = *alias;
        if (out.back().name) out.back().name->loc = *alias;
      }
    }
    if (out.empty()) fail(loc(node, at), what + " is empty; a model needs at least one layer");
    return out;
  }

  std::vector<RawRegister> registers(const YAML::Node& node, const SourceLoc& at, const std::string& where) {
    if (!node.IsMap()) return {{"", names(node, at, where + ": 'register'"), at}};
    std::vector<RawRegister> out;
    each_key(node, at, where + ": 'register'", [&](const std::string& module, const YAML::Node& v, const SourceLoc& k) {
      out.push_back({module, names(v, k, where + ": register: " + module), k});
    });
    return out;
  }

  RawBlock block(const std::string& block_name, const YAML::Node& node, const SourceLoc& at) {
    RawBlock b;
    b.name = block_name;
    b.loc = at;
    bool has_layers = false;
    const std::string where = "block '" + block_name + "'";
    each_key(node, at, where, [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kBlockKeys, where);
      if (key == "params") {
        if (v.IsSequence()) {
          for (const auto& p : v) {
            Named n = name(p, key_loc, "a block parameter");
            b.params.push_back({n.name, n.loc, std::nullopt});
          }
        } else {
          each_key(v, key_loc, "the params of " + where,
                   [&](const std::string& p, const YAML::Node& dv, const SourceLoc& p_loc) {
                     RawParam param{p, p_loc, std::nullopt};
                     if (!dv.IsNull()) param.fallback = value(dv, p_loc, where + ": " + p + ": ");
                     b.params.push_back(std::move(param));
                   });
        }
      } else if (key == "inputs") {
        b.inputs = names(v, key_loc, "a block's inputs");
      } else if (key == "output") {
        b.output = name(v, key_loc, "a block's output");
      } else if (key == "register") {
        b.registers = registers(v, key_loc, where);
      } else if (key == "layers") {
        has_layers = true;
        b.layers = entries(v, key_loc, "the layers of " + where, block_name);
      }
    });
    if (!has_layers) fail(at, where + " has no 'layers'");
    if (b.inputs.empty()) b.inputs.push_back({"in", at});
    return b;
  }

  RawInput input(const std::string& input_name, const YAML::Node& node, const SourceLoc& key_loc) {
    RawInput in;
    in.name = {input_name, key_loc};
    const std::string who = "input '" + input_name + "': ";
    if (node.IsMap()) {
      bool has_shape = false;
      each_key(node, key_loc, "input '" + input_name + "'", [&](const std::string& key, const YAML::Node& v, const SourceLoc& k) {
        check_known(key, k, kInputKeys, "input '" + input_name + "'");
        if (key == "shape") {
          has_shape = true;
          in.shape = value(v, k, who);
        } else {
          in.dtype = name(v, k, "dtype");
        }
      });
      if (!has_shape) fail(key_loc, "input '" + input_name + "' needs a 'shape', e.g. shape: [3, 224, 224]");
    } else {
      in.shape = value(node, key_loc, who);
    }
    if (!in.shape.is_list)
      fail(in.shape.loc, "the shape of input '" + input_name +
                             "' must be a list of sizes per sample (without the batch), e.g. [3, 224, 224]");
    return in;
  }

  RawSpec document(const YAML::Node& root) {
    RawSpec spec;
    spec.file = src_.file();
    spec.loc = {spec.file, 1, 1};
    check_node(root, loc(root, spec.loc), "");
    if (!root.IsMap())
      fail(loc(root, spec.loc), "a spec must be a mapping with 'inputs' and 'layers', found " + kind(root));
    bool has_inputs = false, has_layers = false;
    overrides_ = static_cast<bool>(root["extends"]);  // known before `layers`, wherever the key stands
    each_key(root, spec.loc, "the spec", [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kTopLevelKeys, "the spec");
      if (key == "nnmem") {
        if (!v.IsScalar() || v.Scalar() != "1")
          fail(loc(v, key_loc), "this is nnmem spec format 1; 'nnmem:' must be 1, found " +
                                    (v.IsScalar() && !v.Scalar().empty() ? excerpt(v.Scalar()) : kind(v)));
      } else if (key == "name") {
        spec.name = name(v, key_loc, "the model's name");
      } else if (key == "description") {
        // Free text for people; not used.
      } else if (key == "dtype") {
        spec.dtype = name(v, key_loc, "dtype");
      } else if (key == "variables") {
        spec.variables_loc = key_loc;
        each_key(v, key_loc, "variables", [&](const std::string& var, const YAML::Node& vv, const SourceLoc& k) {
          if (vv.IsSequence() || vv.IsMap())
            fail(loc(vv, k), "variable '" + var + "' must be a single value, found " + kind(vv));
          spec.variables.push_back({{var, k}, value(vv, k, "variable '" + var + "': ")});
        });
      } else if (key == "inputs") {
        has_inputs = true;
        each_key(v, key_loc, "inputs", [&](const std::string& in, const YAML::Node& vv, const SourceLoc& k) {
          spec.inputs.push_back(input(in, vv, k));
        });
        if (spec.inputs.empty()) fail(key_loc, "'inputs' is empty; a model needs at least one input");
      } else if (key == "blocks") {
        each_key(v, key_loc, "blocks", [&](const std::string& b, const YAML::Node& vv, const SourceLoc& k) {
          spec.blocks.push_back(block(b, vv, k));
        });
      } else if (key == "layers") {
        has_layers = true;
        spec.layers = entries(v, key_loc, "'layers'");
      } else if (key == "outputs") {
        spec.outputs = names(v, key_loc, "'outputs'");
      } else if (key == "register") {
        spec.registers = registers(v, key_loc, "the spec");
      } else if (key == "loss") {
        spec.loss = losses(v, key_loc);
      } else if (key == "extends") {
        spec.extends = name(v, key_loc, "extends (the file this spec extends)");
      }
    });
    if (spec.extends) return spec;  // inputs and layers may all come from the base
    if (!has_inputs) fail(spec.loc, "the spec has no 'inputs'; add e.g.  inputs: {image: [3, 224, 224]}");
    if (!has_layers) fail(spec.loc, "the spec has no 'layers'");
    return spec;
  }

 private:
  static constexpr std::int64_t kAliasSlack = 4096;
  static constexpr int kMaxValueDepth = 499;  // yaml-cpp's own limit for a document's text

  const SourceText& src_;
  const AliasItems& alias_items_;
  std::int64_t values_left_;  // value nodes value() may still copy
  bool overrides_ = false;    // the document extends another: its top-level layers are overrides
};

}  // namespace

RawSpec read(const std::string& text, const std::string& file, const LoadOptions& options) {
  const SourceText source(text, file, options.max_file_bytes);
  const Document doc = load_single_document(source, text);
  return Reader(source, text.size(), doc.alias_items).document(doc.root);
}

}  // namespace raw
}  // namespace nnmem
