// `extends: base.yaml`: a spec that is another spec with a few things changed (GPT-2 medium is
// GPT-2 with three variables changed). The base is read (relative to the extending file, and
// itself possibly extending another) and the extending file's parts replace the base's by name:
// variables (in the base's order; new ones after them), inputs, blocks, and top-level layers,
// whose given keys and attributes replace the base layer's one by one. Every value keeps the
// position of the file that wrote it, so an error points into the file that holds its cause.
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include "raw_spec.hpp"
#include "source_text.hpp"

namespace nnmem::raw {
namespace {

constexpr std::size_t kMaxDepth = 16;  // files in one chain of extends

namespace fs = std::filesystem;

std::string display(const fs::path& p) { return p.lexically_normal().generic_string(); }

// Each of `items` replaces the item of `base` whose key equals its own (the first), or is
// appended. By name through a table when the lists are long: a search of the base per item made
// 16 files of 20,000 overrides each take 7.8 s.
template <typename T, typename Key>
void override_or_add(std::vector<T>& base, std::vector<T>&& items, Key key) {
  const auto one = [&](T& item, auto&& find) {
    const std::size_t i = find(item);
    if (i == base.size()) base.push_back(std::move(item));
    else base[i] = std::move(item);
  };
  if (base.size() * items.size() <= 64) {
    for (T& item : items)
      one(item, [&](const T& x) {
        std::size_t i = 0;
        while (i < base.size() && key(base[i]) != key(x)) ++i;
        return i;
      });
    return;
  }
  std::unordered_map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < base.size(); ++i) at.try_emplace(key(base[i]), i);
  for (T& item : items) one(item, [&](const T& x) { return at.try_emplace(key(x), base.size()).first->second; });
}

// The name expand.cpp gives an entry: its own, or its position in the list.
std::string entry_name(const RawEntry& e, std::size_t index) { return e.name ? e.name->name : std::to_string(index); }

void override_entry(RawEntry& base, RawEntry&& over) {
  base.loc = over.loc;  // the layer as changed is the extending file's
  if (over.type || over.block) {
    base.type = std::move(over.type);
    base.block = std::move(over.block);
  }
  if (over.inputs) base.inputs = std::move(over.inputs);
  for (auto [field, from] : {std::pair{&base.repeat, &over.repeat}, {&base.when, &over.when},
                             {&base.trainable, &over.trainable}, {&base.functional, &over.functional},
                             {&base.checkpoint, &over.checkpoint}})
    if (*from) *field = std::move(*from);
  if (over.share) base.share = std::move(over.share);
  if (over.var) base.var = std::move(over.var);
  if (over.held_until) base.held_until = std::move(over.held_until);
  override_or_add(base.ties, std::move(over.ties), [](const auto& t) { return t.first.name; });
  override_or_add(base.attrs, std::move(over.attrs), [](const RawAttr& a) { return a.name; });
}

RawSpec merge(RawSpec base, RawSpec&& over, const std::string& base_file) {
  base.file = over.file;
  base.loc = over.loc;
  if (over.name) base.name = std::move(over.name);
  else base.name.reset();  // the default name is the extending file's stem
  if (over.dtype) base.dtype = std::move(over.dtype);
  override_or_add(base.variables, std::move(over.variables), [](const RawVariable& x) { return x.name.name; });
  override_or_add(base.inputs, std::move(over.inputs), [](const RawInput& x) { return x.name.name; });
  override_or_add(base.blocks, std::move(over.blocks), [](const RawBlock& x) { return x.name; });
  std::vector<std::string> names;
  std::unordered_map<std::string_view, std::size_t> named;  // the first layer of each name
  for (std::size_t i = 0; i < base.layers.size(); ++i) names.push_back(entry_name(base.layers[i], i));
  for (std::size_t i = 0; i < names.size(); ++i) named.try_emplace(names[i], i);
  for (auto& entry : over.layers) {
    const std::string& wanted = entry.name->name;
    const auto found = named.find(wanted);
    const std::size_t i = found == named.end() ? names.size() : found->second;
    if (i == names.size()) {
      std::string msg = "layer '" + wanted + "' is not a top-level layer of " + base_file +
                        ", which this spec extends; an extending spec's layers override the base's by name";
      if (auto near = nearest_name(wanted, names); !near.empty()) msg += "; did you mean '" + near + "'?";
      throw Error(entry.name->loc, msg);
    }
    override_entry(base.layers[i], std::move(entry));
  }
  if (over.outputs) base.outputs = std::move(over.outputs);
  if (over.scope) base.scope = std::move(over.scope);
  override_or_add(base.registers, std::move(over.registers), [](const RawRegister& x) { return x.module; });
  override_or_add(base.modules, std::move(over.modules), [](const Named& x) { return x.name; });
  if (over.loss) base.loss = std::move(over.loss);
  base.extends.reset();
  return base;
}

RawSpec read_chain(const std::string& text, const std::string& file, const LoadOptions& options,
                   std::vector<fs::path>& chain) {
  RawSpec spec = read(text, file, options);
  if (!spec.extends) return spec;
  const Named& ext = *spec.extends;
  // Relative to the extending file; to the working directory for standard input (/dev/stdin,
  // /dev/fd/0), which has no directory of its own.
  const bool device = file.rfind("/dev/", 0) == 0;
  const fs::path base_path = (device ? fs::path() : fs::path(file).parent_path()) / ext.name;
  const std::string base_file = display(base_path);
  std::error_code ec;
  fs::path key = fs::weakly_canonical(base_path, ec);
  if (ec) key = base_path.lexically_normal();
  for (const auto& seen : chain)
    if (seen == key) {
      std::string path;
      for (const auto& p : chain) path += display(p.filename()) + " -> ";
      throw Error(ext.loc, "extends '" + ext.name + "' makes a cycle: " + path + display(key.filename()));
    }
  if (chain.size() >= kMaxDepth)
    throw Error(ext.loc, "extends '" + ext.name + "': more than " + std::to_string(kMaxDepth) + " files extend one another");
  std::string base_text;
  try {
    base_text = read_spec_file(base_file, options.max_file_bytes);
  } catch (const Error& e) {
    throw Error(ext.loc, "extends '" + ext.name + "' (" + base_file + "): " + e.message());
  }
  chain.push_back(key);
  RawSpec base = read_chain(base_text, base_file, options, chain);
  chain.pop_back();
  return merge(std::move(base), std::move(spec), base_file);
}

}  // namespace

RawSpec read_extended(const std::string& text, const std::string& file, const LoadOptions& options) {
  std::vector<fs::path> chain;
  std::error_code ec;
  const fs::path self = fs::weakly_canonical(file, ec);
  chain.push_back(ec ? fs::path(file).lexically_normal() : self);
  return read_chain(text, file, options, chain);
}

}  // namespace nnmem::raw
