// The spec as the YAML file wrote it, before expansion: `$expressions` unevaluated, blocks not
// yet instantiated, names not yet resolved. loader.cpp builds it (with loader_stream.cpp, the
// only code that sees yaml-cpp, and source_text.cpp for bytes and positions); expand.cpp turns
// it into a ModelSpec.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "expression.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/rare.hpp"
#include "nnmem/spec.hpp"

namespace nnmem::raw {

/// A scalar, a list (whose items may be lists) or a mapping; a scalar beginning with `$` is an
/// expression. A mapping keeps no contents: no value may be one, but saying so is left to
/// whoever knows what was expected (the layer's schema, `repeat`, …).
struct RawValue {
  Value literal;                      // when not an expression, a list or a mapping
  std::optional<std::string> expression;
  std::shared_ptr<const expr::Program> program;  // the expression parsed once (null: it does not parse)
  bool is_list = false;
  bool is_map = false;
  std::vector<RawValue> items;        // a list's
  SourceLoc loc;
};

/// Makes `raw` the expression `text` (without its `$`), parsed once here for every evaluation;
/// an Error at raw.loc, after `who` (what it is: "Linear 'fc': out_features: "), if it is longer
/// than expr::kMaxExpressionLength.
inline void set_expression(RawValue& raw, std::string text, const std::string& who) {
  if (text.size() > expr::kMaxExpressionLength)
    throw Error(raw.loc, who + "this expression is " + with_commas(static_cast<long long>(text.size())) +
                             " characters long; the limit is " + with_commas(static_cast<long long>(expr::kMaxExpressionLength)));
  raw.program = expr::compile(text);
  raw.expression = std::move(text);
}

struct Named {
  std::string name;
  SourceLoc loc;
};

struct RawAttr {
  std::string name;
  SourceLoc key_loc;
  RawValue value;
};

/// One entry of a `layers:` list: a layer (`type`) or a block instance (`block`).
struct RawEntry {
  SourceLoc loc;
  std::optional<Named> name;
  std::optional<RawValue> type;       // may be an expression (a block parameter)
  std::optional<Named> block;
  std::optional<std::vector<Named>> inputs;
  Rare<RawValue> repeat, when, trainable, functional, checkpoint;
  Rare<Named> share;                  // `share: NAME`: calls that layer's module again
  Rare<Named> var;                    // `var: x`: forward() assigns the entry's result to variable x
  Rare<Named> held_until;             // `held_until: NAME`: the result is referred to until that later entry has run
  std::vector<std::pair<Named, RawValue>> ties;  // `tie: {weight: wte.weight}`: (own parameter, LAYER.PARAM or null)
  std::vector<RawAttr> attrs;         // layer attributes, or block arguments
};

/// `register:`, the order __init__ registers members in: a list for the block itself (at the top
/// level, the model), or a mapping {MODULE: [members]} for a module its layer names nest
/// (`layer` of layer.self_attn, layer.norm1).
struct RawRegister {
  std::string module;                 // relative: "" for the block or model itself
  std::vector<Named> members;
  SourceLoc loc;                      // the list's key
};

struct RawParam {
  std::string name;
  SourceLoc loc;
  std::optional<RawValue> fallback;   // none: the argument is required
};

struct RawBlock {
  std::string name;
  SourceLoc loc;
  std::vector<RawParam> params;
  std::vector<Named> inputs;          // default: a single input called `in`
  std::optional<Named> output;        // default: the last layer
  std::vector<RawEntry> layers;
  std::vector<RawRegister> registers;
  std::vector<Named> modules;         // `modules:`: modules __init__ registers that no layer stands for
  std::optional<Named> cls;           // `class: TransformerEncoderLayer`: the PyTorch module it is
};

/// Checks `register:` lists against the layers they order (a block's, or the spec's: `owner`
/// says which): each member of the module (a layer's or block instance's name, after the
/// module's, up to the next dot) that is a module listed once, nothing else. Throws a located
/// Error. registration.cpp.
void check_registration(const std::vector<RawEntry>& layers, const std::vector<RawRegister>& registers,
                        const std::string& owner);
/// Checks a `modules:` list: each name (local, may be dotted) listed once and not a layer's (a
/// layer stands for its module already). Throws a located Error. registration.cpp.
void check_modules(const std::vector<RawEntry>& layers, const std::vector<Named>& modules, const std::string& owner);

struct RawInput {
  Named name;
  RawValue shape;
  std::optional<Named> dtype;
};

struct RawVariable {
  Named name;
  RawValue value;
};

/// One term of `loss:`, as written (each part may be an expression).
struct RawLoss {
  SourceLoc loc;
  std::optional<RawValue> output, kind, weight, when;  // `type:` is its kind
  std::vector<RawAttr> attrs;  // the loss's options (label_smoothing: 0.1), checked by the memory stage
};

/// `scope: {name: EXPR, members: [...]}`: the submodule the listed top-level members sit in, where
/// a variable chooses it (Hugging Face's base_model_prefix: BertForPreTraining's `bert`); an empty
/// name puts them in the model itself.
struct RawScope {
  SourceLoc loc;
  RawValue name;
  std::vector<Named> members;
};

struct RawSpec {
  std::string file;
  SourceLoc loc;
  std::optional<Named> name;
  std::optional<Named> dtype;
  SourceLoc variables_loc;
  std::vector<RawVariable> variables;
  std::vector<RawInput> inputs;
  std::vector<RawBlock> blocks;
  std::vector<RawEntry> layers;
  std::optional<std::vector<Named>> outputs;
  std::optional<std::vector<RawLoss>> loss;  // `loss: KIND` is one term without an output
  std::optional<Named> extends;       // `extends: base.yaml`, relative to this file
  std::vector<RawRegister> registers;
  std::vector<Named> modules;
  std::optional<RawScope> scope;
};

/// YAML text -> RawSpec (syntax and structure only). loader.cpp.
RawSpec read(const std::string& text, const std::string& file, const LoadOptions& options);
/// YAML text -> RawSpec with its `extends:` chain read and merged (extends.cpp): the base's
/// variables, inputs, blocks and layers, overridden by name by the extending file's.
RawSpec read_extended(const std::string& text, const std::string& file, const LoadOptions& options);
/// RawSpec -> ModelSpec (variables, blocks, repeat, when, name resolution). expand.cpp.
ModelSpec expand(const RawSpec& spec, const LoadOptions& options);

}  // namespace nnmem::raw
