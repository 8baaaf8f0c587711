// YAML document -> RawSpec: the spec's structure (which keys exist, which are maps or lists),
// every position kept. With loader_stream.cpp (text -> one YAML document, yaml_doc.hpp's nodes),
// loader_reader.cpp (reading one node: positions, keys, values) and loader_nodes.cpp (what a node
// is, what its tag makes it), the only code that sees YAML. Meaning is given later by expand.cpp (names,
// blocks) and the graph (attribute types, shapes); bytes, encodings and character columns are
// source_text.cpp's business.
#include <algorithm>
#include <cctype>
#include <map>

#include "loader_reader.hpp"
#include "loader_stream.hpp"
#include "raw_spec.hpp"
#include "source_text.hpp"

namespace nnmem {
namespace raw {
namespace {

const std::vector<std::string> kTopLevelKeys = {"nnmem",  "name",   "description", "dtype",   "variables", "inputs",
                                                "blocks", "layers", "outputs",     "loss",    "extends", "register",
                                                "modules", "scope"};
const std::vector<std::string> kBlockKeys = {"params", "inputs", "output", "layers", "register", "modules", "class", "description"};
const std::vector<std::string> kInputKeys = {"shape", "dtype"};

// A word such as a layer type's name: a letter, then letters, digits and underscores.
bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// The spec's structure, read with NodeReader's node primitives (loader_reader.hpp).
class Reader : public NodeReader {
 public:
  using NodeReader::NodeReader;

  // `loss: TYPE`; `loss: {type: TYPE, OPTION: value, …}`; or a list of terms {output: NAME,
  // type: TYPE, weight: W, when: COND, OPTION: value, …}. Options (label_smoothing) are checked
  // against the loss's by the memory stage, which knows them.
  std::vector<RawLoss> losses(const YNode& node, const SourceLoc& at) {
    if (!node.is_list() && !node.is_map()) return {RawLoss{at, std::nullopt, value(node, at, "loss: "), std::nullopt, std::nullopt, {}}};
    std::vector<RawLoss> out;
    std::vector<YNode> items;
    if (node.is_map()) items.push_back(node);  // one term written without its list
    else
      for (const YNode item : node.items()) items.push_back(item);
    for (const YNode item : items) {
      RawLoss l;
      l.loc = loc(item, at);
      each_key(item, l.loc, "a loss (such as {output: logits, type: cross_entropy, weight: 1})",
               [&](const std::string& key, const YNode& v, const SourceLoc& k) {
                 std::optional<RawValue>* slot = key == "output" ? &l.output : key == "type" ? &l.kind
                                                 : key == "weight" ? &l.weight : key == "when" ? &l.when : nullptr;
                 if (slot) *slot = value(v, k, "loss: " + key + ": ");
                 else if (static const std::vector<std::string> terms = {"output", "type", "weight", "when"};
                          !nearest_name(key, terms).empty())
                   check_known(key, k, terms, "a loss");  // a misspelt term key ('wieght')
                 else l.attrs.push_back({key, k, value(v, k, "loss: " + key + ": ")});
               });
      if (!l.kind) fail(l.loc, "a loss needs 'type' (e.g. {type: cross_entropy, label_smoothing: 0.1})");
      if (!l.output && node.is_list()) fail(l.loc, "a loss in a list needs 'output' (the value it reads)");
      out.push_back(std::move(l));
    }
    if (out.empty()) fail(at, "'loss' is an empty list; omit it for the default (mean)");
    return out;
  }

  // How errors found while reading a layer name it, before its name and type are validated:
  // "Conv2d 'conv1'", "Residual 'res'" (a block instance), "layer 'fc1'" while its type is not
  // a plain name; " in block 'Down'" for a layer of a block's definition. Unnamed layers are
  // named by their position, as expand.cpp names them.
  std::string entry_title(const YNode& node, std::size_t index, const std::string& block) const {
    std::string name = std::to_string(index), type = "layer";
    for (const YNode::Pair it : node.pairs()) {
      if (!it.first.is_scalar() || !it.second.is_scalar() || it.second.scalar().empty()) continue;
      const std::string& key = it.first.scalar();
      const std::string& text = it.second.scalar();
      if (key == "name") name = text;
      if ((key == "type" || (key == "block" && type == "layer")) && text[0] != '$') type = text;
    }
    return type + " '" + name + "'" + (block.empty() ? "" : " in block '" + block + "'");
  }

  RawEntry entry(const YNode& node, const SourceLoc& fallback, std::size_t index, const std::string& block) {
    RawEntry e;
    e.loc = loc(node, fallback);
    if (!node.is_map()) {
      std::string msg = "each layer must be a mapping such as {type: Conv2d, out_channels: 64, ...}, found " + kind(node);
      // A bare word is most likely a type name written without its mapping (the graph checks it).
      if (node.is_scalar() && is_identifier(node.scalar())) msg += " (did you mean {type: " + node.scalar() + "}?)";
      fail(e.loc, msg);
    }
    const std::string who = entry_title(node, index, block) + ": ";
    check_node(node, e.loc, who);
    std::optional<SourceLoc> input_key;
    each_key(node, e.loc, "a layer", [&](const std::string& key, const YNode& v, const SourceLoc& key_loc) {
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
        each_key(v, key_loc, who + "'tie'", [&](const std::string& param, const YNode& target, const SourceLoc& k) {
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
  std::vector<RawEntry> entries(const YNode& node, const SourceLoc& at, const std::string& what,
                                const std::string& block = {}) {
    if (!node.is_list())
      fail(loc(node, at), what + " must be a list of layers (- {type: ...}), found " + kind(node));
    std::vector<RawEntry> out;
    out.reserve(node.size());  // a RawEntry is over a kilobyte: not moved again as the list grows
    for (const YNode item : node.items()) {
      out.push_back(entry(item, loc(node, at), out.size(), block));
      if (const auto alias = alias_items_.at(src_, node, out.size() - 1)) {
        out.back().loc = *alias;
        if (out.back().name) out.back().name->loc = *alias;
      }
    }
    if (out.empty()) fail(loc(node, at), what + " is empty; a model needs at least one layer");
    return out;
  }

  std::vector<RawRegister> registers(const YNode& node, const SourceLoc& at, const std::string& where) {
    if (!node.is_map()) return {{"", names(node, at, where + ": 'register'"), at}};
    std::vector<RawRegister> out;
    each_key(node, at, where + ": 'register'", [&](const std::string& module, const YNode& v, const SourceLoc& k) {
      out.push_back({module, names(v, k, where + ": register: " + module), k});
    });
    return out;
  }

  RawScope scope(const YNode& node, const SourceLoc& at) {
    RawScope s{at, {}, {}};
    bool has_name = false, has_members = false;
    each_key(node, at, "the spec: 'scope'", [&](const std::string& key, const YNode& v, const SourceLoc& k) {
      check_known(key, k, {"name", "members"}, "the spec: 'scope'");
      if (key == "name") {
        has_name = true;
        s.name = value(v, k, "scope: name: ");
      } else {
        has_members = true;
        s.members = names(v, k, "the spec: scope: members");
      }
    });
    if (!has_name || !has_members)
      fail(at, std::string("the spec: 'scope' needs a 'name' (the submodule, '' for none) and 'members' (the top-level members in "
                           "it); found no '") + (has_name ? "members" : "name") + "'");
    return s;
  }

  RawBlock block(const std::string& block_name, const YNode& node, const SourceLoc& at) {
    RawBlock b;
    b.name = block_name;
    b.loc = at;
    bool has_layers = false;
    const std::string where = "block '" + block_name + "'";
    each_key(node, at, where, [&](const std::string& key, const YNode& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kBlockKeys, where);
      if (key == "params") {
        if (v.is_list()) {
          for (const YNode p : v.items()) {
            Named n = name(p, key_loc, "a block parameter");
            b.params.push_back({n.name, n.loc, std::nullopt});
          }
        } else {
          each_key(v, key_loc, "the params of " + where,
                   [&](const std::string& p, const YNode& dv, const SourceLoc& p_loc) {
                     RawParam param{p, p_loc, std::nullopt};
                     if (!dv.is_null()) param.fallback = value(dv, p_loc, where + ": " + p + ": ");
                     b.params.push_back(std::move(param));
                   });
        }
      } else if (key == "inputs") {
        b.inputs = names(v, key_loc, "a block's inputs");
      } else if (key == "output") {
        b.output = name(v, key_loc, "a block's output");
      } else if (key == "register") {
        b.registers = registers(v, key_loc, where);
      } else if (key == "modules") {
        b.modules = names(v, key_loc, where + ": 'modules'");
      } else if (key == "class") {
        b.cls = name(v, key_loc, "a block's class");
      } else if (key == "layers") {
        has_layers = true;
        b.layers = entries(v, key_loc, "the layers of " + where, block_name);
      }
    });
    if (!has_layers) fail(at, where + " has no 'layers'");
    if (b.inputs.empty()) b.inputs.push_back({"in", at});
    return b;
  }

  RawInput input(const std::string& input_name, const YNode& node, const SourceLoc& key_loc) {
    RawInput in;
    in.name = {input_name, key_loc};
    const std::string who = "input '" + input_name + "': ";
    if (node.is_map()) {
      bool has_shape = false;
      each_key(node, key_loc, "input '" + input_name + "'", [&](const std::string& key, const YNode& v, const SourceLoc& k) {
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

  RawSpec document(const YNode& root) {
    RawSpec spec;
    spec.file = src_.file().string();
    spec.loc = {src_.file(), 1, 1};
    check_node(root, loc(root, spec.loc), "");
    if (!root.is_map())
      fail(loc(root, spec.loc), "a spec must be a mapping with 'inputs' and 'layers', found " + kind(root));
    bool has_inputs = false, has_layers = false;
    overrides_ = root.has_key("extends");  // known before `layers`, wherever the key stands
    each_key(root, spec.loc, "the spec", [&](const std::string& key, const YNode& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kTopLevelKeys, "the spec");
      if (key == "nnmem") {
        if (!v.is_scalar() || v.scalar() != "1")
          fail(loc(v, key_loc), "this is nnmem spec format 1; 'nnmem:' must be 1, found " +
                                    (v.is_scalar() && !v.scalar().empty() ? excerpt(v.scalar()) : kind(v)));
      } else if (key == "name") {
        spec.name = name(v, key_loc, "the model's name");
      } else if (key == "description") {
        // Free text for people; not used.
      } else if (key == "dtype") {
        spec.dtype = name(v, key_loc, "dtype");
      } else if (key == "variables") {
        spec.variables_loc = key_loc;
        each_key(v, key_loc, "variables", [&](const std::string& var, const YNode& vv, const SourceLoc& k) {
          if (vv.is_list() || vv.is_map())
            fail(loc(vv, k), "variable '" + var + "' must be a single value, found " + kind(vv));
          spec.variables.push_back({{var, k}, value(vv, k, "variable '" + var + "': ")});
        });
      } else if (key == "inputs") {
        has_inputs = true;
        each_key(v, key_loc, "inputs", [&](const std::string& in, const YNode& vv, const SourceLoc& k) {
          spec.inputs.push_back(input(in, vv, k));
        });
        if (spec.inputs.empty()) fail(key_loc, "'inputs' is empty; a model needs at least one input");
      } else if (key == "blocks") {
        each_key(v, key_loc, "blocks", [&](const std::string& b, const YNode& vv, const SourceLoc& k) {
          spec.blocks.push_back(block(b, vv, k));
        });
      } else if (key == "layers") {
        has_layers = true;
        spec.layers = entries(v, key_loc, "'layers'");
      } else if (key == "outputs") {
        spec.outputs = names(v, key_loc, "'outputs'");
      } else if (key == "register") {
        spec.registers = registers(v, key_loc, "the spec");
      } else if (key == "modules") {
        spec.modules = names(v, key_loc, "the spec: 'modules'");
      } else if (key == "scope") {
        spec.scope = scope(v, key_loc);
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
