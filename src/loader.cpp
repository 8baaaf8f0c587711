// YAML text -> RawSpec. The only file that includes yaml-cpp: it checks the document's
// structure (which keys exist, which are maps or lists) and keeps every position; meaning is
// given later by expand.cpp (names, blocks) and the graph (attribute types, shapes).
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "raw_spec.hpp"

namespace nnmem {
namespace raw {
namespace {

const std::vector<std::string> kTopLevelKeys = {"nnmem", "name",   "description", "dtype", "variables",
                                                "inputs", "blocks", "layers",      "outputs", "loss"};
const std::vector<std::string> kBlockKeys = {"params", "inputs", "output", "layers", "description"};
const std::vector<std::string> kInputKeys = {"shape", "dtype"};

// Finds the first byte that is not valid UTF-8 and reports its line and column.
void check_utf8(const std::string& text, const std::string& file) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok && len == 2) ok = c >= 0xC2;  // no overlong encodings
    if (!ok) {
      std::ostringstream msg;
      msg << "the file is not valid UTF-8: byte 0x" << std::hex << static_cast<int>(c) << " cannot appear here";
      throw Error({file, line, column}, msg.str());
    }
    if (c == '\n') { ++line; column = 1; } else { ++column; }
    if (c == 0) throw Error({file, line, column - 1}, "the file contains a NUL byte; a spec is a text file");
    i += len;
  }
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  SourceLoc loc(const YAML::Node& node, const SourceLoc& fallback) const {
    const YAML::Mark m = node.Mark();
    if (m.is_null() || node.IsNull()) return fallback;
    return {file_, m.line + 1, m.column + 1};
  }
  SourceLoc loc(const YAML::Node& node) const { return loc(node, {file_, 0, 0}); }

  [[noreturn]] void fail(const SourceLoc& at, const std::string& message) const { throw Error(at, message); }

  static const char* kind(const YAML::Node& n) {
    if (n.IsMap()) return "a mapping";
    if (n.IsSequence()) return "a list";
    if (n.IsNull()) return "nothing (null)";
    return "a scalar";
  }

  // Iterates a mapping, rejecting duplicate keys and keys that are not plain strings.
  template <typename F>
  void each_key(const YAML::Node& map, const SourceLoc& where, const std::string& what, F&& f) const {
    if (!map.IsMap()) fail(loc(map, where), what + " must be a mapping (key: value), found " + kind(map));
    std::map<std::string, SourceLoc> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      const SourceLoc key_loc = loc(key, where);
      if (!key.IsScalar()) fail(key_loc, "keys in " + what + " must be names, found " + kind(key));
      const std::string name = key.Scalar();
      if (auto [pos, fresh] = seen.emplace(name, key_loc); !fresh)
        fail(key_loc, "duplicate key '" + name + "' in " + what + " (first given at line " +
                          std::to_string(pos->second.line) + ")");
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

  Value literal(const YAML::Node& node, const SourceLoc& at) const {
    Value v;
    v.loc = at;
    if (node.IsNull()) return v;
    const std::string& s = node.Scalar();
    if (node.Tag() == "!") {  // quoted: always a string
      v.kind = Value::Kind::String;
      v.text = s;
      return v;
    }
    return parse_literal(s, at);
  }

  // A scalar starting with `$` is an expression, quoted or not (quotes let an expression hold
  // YAML's own characters, as in "$index == 0 ? 2 : 1"); `$$` stands for a literal `$`.
  RawValue scalar_or_expr(const YAML::Node& node, const SourceLoc& at) const {
    RawValue r;
    r.loc = at;
    const bool dollar = node.IsScalar() && !node.Scalar().empty() && node.Scalar()[0] == '$';
    if (dollar && node.Scalar().rfind("$$", 0) != 0) {
      r.expression = node.Scalar().substr(1);
    } else {
      r.literal = literal(node, at);
      if (dollar) r.literal.text.erase(0, 1);
    }
    return r;
  }

  // A scalar, or a flat list of scalars.
  RawValue value(const YAML::Node& node, const SourceLoc& fallback) const {
    const SourceLoc at = loc(node, fallback);
    if (node.IsMap()) fail(at, "expected a value or a list of values, found a mapping");
    if (!node.IsSequence()) return scalar_or_expr(node, at);
    RawValue r;
    r.loc = at;
    r.is_list = true;
    for (const auto& item : node) {
      const SourceLoc item_loc = loc(item, at);
      if (!item.IsScalar() && !item.IsNull())
        fail(item_loc, "expected a list of single values, found " + std::string(kind(item)) + " inside it");
      r.items.push_back(scalar_or_expr(item, item_loc));
    }
    return r;
  }

  Named name(const YAML::Node& node, const SourceLoc& fallback, const std::string& what) const {
    const SourceLoc at = loc(node, fallback);
    if (!node.IsScalar() || node.Scalar().empty())
      fail(at, what + " must be a non-empty name, found " + kind(node));
    return {node.Scalar(), at};
  }

  std::vector<Named> names(const YAML::Node& node, const SourceLoc& fallback, const std::string& what) const {
    std::vector<Named> out;
    if (node.IsSequence()) {
      for (const auto& item : node) out.push_back(name(item, loc(node, fallback), what));
      if (out.empty()) fail(loc(node, fallback), what + " must name at least one value");
    } else {
      out.push_back(name(node, fallback, what));
    }
    return out;
  }

  RawEntry entry(const YAML::Node& node, const SourceLoc& fallback) const {
    RawEntry e;
    e.loc = loc(node, fallback);
    if (!node.IsMap())
      fail(e.loc, "each layer must be a mapping such as {type: Conv2d, out_channels: 64, ...}, found " +
                      std::string(kind(node)));
    std::optional<SourceLoc> input_key;
    each_key(node, e.loc, "a layer", [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      if (key == "name") {
        e.name = name(v, key_loc, "a layer's name");
      } else if (key == "type") {
        e.type = value(v, key_loc);
      } else if (key == "block") {
        e.block = name(v, key_loc, "block");
      } else if (key == "input" || key == "inputs") {
        if (input_key) fail(key_loc, "give either 'input' or 'inputs', not both");
        input_key = key_loc;
        e.inputs = names(v, key_loc, "'" + key + "'");
      } else if (key == "repeat") {
        e.repeat = value(v, key_loc);
      } else if (key == "when") {
        e.when = value(v, key_loc);
      } else if (key == "trainable") {
        e.trainable = value(v, key_loc);
      } else if (key == "functional") {
        e.functional = value(v, key_loc);
      } else {
        e.attrs.push_back({key, key_loc, value(v, key_loc)});
      }
    });
    if (e.type && e.block) fail(e.block->loc, "a layer has either 'type' (a layer type) or 'block' (a block name), not both");
    if (!e.type && !e.block)
      fail(e.loc, "this layer has no 'type'; give a layer type (type: Conv2d) or a block (block: MyBlock)");
    return e;
  }

  std::vector<RawEntry> entries(const YAML::Node& node, const SourceLoc& at, const std::string& what) const {
    if (!node.IsSequence())
      fail(loc(node, at), what + " must be a list of layers (- {type: ...}), found " + kind(node));
    std::vector<RawEntry> out;
    for (const auto& item : node) out.push_back(entry(item, loc(node, at)));
    if (out.empty()) fail(loc(node, at), what + " is empty; a model needs at least one layer");
    return out;
  }

  RawBlock block(const std::string& block_name, const YAML::Node& node, const SourceLoc& at) const {
    RawBlock b;
    b.name = block_name;
    b.loc = at;
    bool has_layers = false;
    each_key(node, at, "block '" + block_name + "'", [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kBlockKeys, "block '" + block_name + "'");
      if (key == "params") {
        if (v.IsSequence()) {
          for (const auto& p : v) {
            Named n = name(p, key_loc, "a block parameter");
            b.params.push_back({n.name, n.loc, std::nullopt});
          }
        } else {
          each_key(v, key_loc, "the params of block '" + block_name + "'",
                   [&](const std::string& p, const YAML::Node& dv, const SourceLoc& p_loc) {
                     RawParam param{p, p_loc, std::nullopt};
                     if (!dv.IsNull()) param.fallback = value(dv, p_loc);
                     b.params.push_back(std::move(param));
                   });
        }
      } else if (key == "inputs") {
        b.inputs = names(v, key_loc, "a block's inputs");
      } else if (key == "output") {
        b.output = name(v, key_loc, "a block's output");
      } else if (key == "layers") {
        has_layers = true;
        b.layers = entries(v, key_loc, "the layers of block '" + block_name + "'");
      }
    });
    if (!has_layers) fail(at, "block '" + block_name + "' has no 'layers'");
    if (b.inputs.empty()) b.inputs.push_back({"in", at});
    return b;
  }

  RawInput input(const std::string& input_name, const YAML::Node& node, const SourceLoc& key_loc) const {
    RawInput in;
    in.name = {input_name, key_loc};
    if (node.IsMap()) {
      bool has_shape = false;
      each_key(node, key_loc, "input '" + input_name + "'", [&](const std::string& key, const YAML::Node& v, const SourceLoc& k) {
        check_known(key, k, kInputKeys, "input '" + input_name + "'");
        if (key == "shape") {
          has_shape = true;
          in.shape = value(v, k);
        } else {
          in.dtype = name(v, k, "dtype");
        }
      });
      if (!has_shape) fail(key_loc, "input '" + input_name + "' needs a 'shape', e.g. shape: [3, 224, 224]");
    } else {
      in.shape = value(node, key_loc);
    }
    if (!in.shape.is_list)
      fail(in.shape.loc, "the shape of input '" + input_name +
                             "' must be a list of sizes per sample (without the batch), e.g. [3, 224, 224]");
    return in;
  }

  RawSpec document(const YAML::Node& root) const {
    RawSpec spec;
    spec.file = file_;
    spec.loc = {file_, 1, 1};
    if (!root.IsMap())
      fail(loc(root, spec.loc), "a spec must be a mapping with 'inputs' and 'layers', found " + std::string(kind(root)));
    bool has_inputs = false, has_layers = false;
    each_key(root, spec.loc, "the spec", [&](const std::string& key, const YAML::Node& v, const SourceLoc& key_loc) {
      check_known(key, key_loc, kTopLevelKeys, "the spec");
      if (key == "nnmem") {
        if (!v.IsScalar() || v.Scalar() != "1")
          fail(loc(v, key_loc), "this is nnmem spec format 1; 'nnmem:' must be 1");
      } else if (key == "name") {
        spec.name = name(v, key_loc, "the model's name");
      } else if (key == "description") {
        // Free text for people; not used.
      } else if (key == "dtype") {
        spec.dtype = name(v, key_loc, "dtype");
      } else if (key == "variables") {
        spec.variables_loc = key_loc;
        each_key(v, key_loc, "variables", [&](const std::string& var, const YAML::Node& vv, const SourceLoc& k) {
          if (vv.IsSequence() || vv.IsMap()) fail(loc(vv, k), "variable '" + var + "' must be a single value");
          spec.variables.push_back({{var, k}, value(vv, k)});
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
      } else if (key == "loss") {
        spec.loss = name(v, key_loc, "loss");
      }
    });
    if (!has_inputs) fail(spec.loc, "the spec has no 'inputs'; add e.g.  inputs: {image: [3, 224, 224]}");
    if (!has_layers) fail(spec.loc, "the spec has no 'layers'");
    return spec;
  }

 private:
  std::string file_;
};

}  // namespace

RawSpec read(const std::string& text, const std::string& file, const LoadOptions& options) {
  if (static_cast<std::int64_t>(text.size()) > options.max_file_bytes)
    throw Error({file, 0, 0}, "the file is " + with_commas(static_cast<long long>(text.size())) +
                                  " bytes; specs larger than " + with_commas(options.max_file_bytes) +
                                  " bytes are refused");
  check_utf8(text, file);
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::ParserException& e) {
    throw Error({file, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg);
  }
  const Reader reader(file);
  if (docs.empty() || docs[0].IsNull())
    throw Error({file, 1, 1}, "the file is empty; a spec needs 'inputs' and 'layers'");
  if (docs.size() > 1)
    throw Error(reader.loc(docs[1], {file, 1, 1}), "the file holds several YAML documents; a spec is one document");
  return reader.document(docs[0]);
}

}  // namespace raw

ModelSpec parse_spec(const std::string& text, const std::string& file, const LoadOptions& options) {
  return raw::expand(raw::read(text, file, options), options);
}

ModelSpec load_spec_file(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error({path, 0, 0}, "is a directory, not a spec file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "cannot open the file");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error({path, 0, 0}, "cannot read the file");
  if (size > options.max_file_bytes)
    throw Error({path, 0, 0}, "the file is " + with_commas(size) + " bytes; specs larger than " +
                                  with_commas(options.max_file_bytes) + " bytes are refused");
  in.seekg(0);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), size);
  if (!in) throw Error({path, 0, 0}, "cannot read the file");
  return parse_spec(text, path, options);
}

}  // namespace nnmem
