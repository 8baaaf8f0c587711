// `register:`: the order an nn.Module's __init__ registers its members, where that differs from
// the order forward calls them (Ultralytics' C2f registers cv1, cv2, then the Bottlenecks m that
// run between them). The graph orders the parameters by it (src/graph/parameters.cpp); here each
// list is checked against the layers of the module it orders, and appended to the spec qualified
// by the instance it orders.
#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "expand.hpp"

namespace nnmem::raw {
namespace {

struct Member {
  std::string name;
  bool module = false;  // some entry of it is a module: not functional, not another's (`share`)
  SourceLoc loc;
};

// The members of the module `prefix` ("" for the block or model itself; else "layer."), in the
// order the layers name them: each entry's local name after the prefix, up to the next dot
// ("m" of m.0; an unnamed entry is named by its position).
std::vector<Member> members(const std::vector<RawEntry>& layers, const std::string& prefix) {
  std::vector<Member> out;
  std::unordered_map<std::string, std::size_t> at;  // name -> its place in out
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const RawEntry& e = layers[k];
    const std::string local = e.name ? e.name->name : std::to_string(k);
    if (local.size() <= prefix.size() || local.compare(0, prefix.size(), prefix) != 0) continue;
    std::string head = local.substr(prefix.size(), local.find('.', prefix.size()) - prefix.size());
    const bool functional = e.functional && !e.functional->expression && e.functional->literal.kind == Value::Kind::Bool &&
                            e.functional->literal.boolean;
    const auto [it, fresh] = at.try_emplace(head, out.size());
    if (fresh) out.push_back(Member{std::move(head), false, e.name ? e.name->loc : e.loc});
    Member& m = out[it->second];
    m.module = m.module || (!functional && !e.share);
  }
  return out;
}

void check_list(const std::vector<RawEntry>& layers, const RawRegister& list, const std::string& owner) {
  const std::string who = owner + ": register" + (list.module.empty() ? "" : ": " + list.module) + ": ";
  const std::vector<Member> all = members(layers, list.module.empty() ? "" : list.module + ".");
  if (all.empty())
    throw Error(list.loc, who + "no layer is named '" + list.module + ".…', so there is no module '" + list.module +
                              "' to order");
  std::vector<std::string> modules;
  std::string listing;
  for (const Member& m : all)
    if (m.module) {
      modules.push_back(m.name);
      listing += (listing.empty() ? "" : ", ") + m.name;
    }
  std::unordered_map<std::string_view, const Member*> by_name;
  for (const Member& m : all) by_name.emplace(m.name, &m);
  std::map<std::string, SourceLoc> listed;
  std::string found;
  for (const Named& n : list.members) {
    const auto named = by_name.find(n.name);
    const Member* member = named == by_name.end() ? nullptr : named->second;
    if (!member)
      throw Error(n.loc, who + "'" + n.name + "' is not a member; expected one of the modules (" + listing + ")" +
                             suggestion(n.name, modules));
    if (!member->module)
      throw Error(n.loc, who + "'" + n.name + "' (line " + std::to_string(member->loc.line) +
                             ") is no module of its own (functional, or calling another layer's with 'share'), so it "
                             "registers nothing; expected one of (" + listing + ")");
    const auto [it, fresh] = listed.emplace(n.name, n.loc);
    if (!fresh)
      throw Error(n.loc, who + "'" + n.name + "' is listed twice (first at line " + std::to_string(it->second.line) +
                             ", column " + std::to_string(it->second.column) + ")");
    found += (found.empty() ? "" : ", ") + n.name;
  }
  for (const Member& m : all)
    if (m.module && !listed.count(m.name))
      throw Error(list.loc, who + "does not list '" + m.name + "' (line " + std::to_string(m.loc.line) +
                                "); expected each of the modules (" + listing +
                                ") once, in the order __init__ registers them, found (" + found + ")");
}

}  // namespace

void check_registration(const std::vector<RawEntry>& layers, const std::vector<RawRegister>& registers,
                        const std::string& owner) {
  for (const RawRegister& list : registers) check_list(layers, list, owner);
}

void check_modules(const std::vector<RawEntry>& layers, const std::vector<Named>& modules, const std::string& owner) {
  if (modules.empty()) return;
  // Each layer's name and the modules it nests in ("a.b.c": a, a.b and itself), with the first
  // layer each names (searching the layers for each module was quadratic).
  std::unordered_map<std::string, std::size_t> first_layer;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const std::string local = layers[k].name ? layers[k].name->name : std::to_string(k);
    for (std::size_t dot = local.find('.'); dot != std::string::npos; dot = local.find('.', dot + 1))
      first_layer.try_emplace(local.substr(0, dot), k);
    first_layer.try_emplace(local, k);
  }
  std::map<std::string, SourceLoc> listed;
  for (const Named& n : modules) {
    if (const auto it = first_layer.find(n.name); it != first_layer.end()) {
      const RawEntry& e = layers[it->second];
      const std::string local = e.name ? e.name->name : std::to_string(it->second);
      throw Error(n.loc, owner + ": modules: '" + n.name + "' is a layer's module ('" + local + "', line " +
                             std::to_string((e.name ? e.name->loc : e.loc).line) +
                             "); 'modules' lists the modules __init__ registers that no layer stands for");
    }
    const auto [it, fresh] = listed.emplace(n.name, n.loc);
    if (!fresh)
      throw Error(n.loc, owner + ": modules: '" + n.name + "' is listed twice (first at line " +
                             std::to_string(it->second.line) + ", column " + std::to_string(it->second.column) + ")");
  }
}

std::string ModuleScope::qualify(const std::string& local) const {
  if (prefix.empty() || !members.count(local.substr(0, local.find('.')))) return local;
  return prefix + local;
}

ModuleScope module_scope(const RawSpec& spec, const VarScope& vars) {
  ModuleScope out;
  if (!spec.scope) return out;
  const RawScope& s = *spec.scope;
  const Value name = evaluate(s.name, vars, "scope", "name");
  if (name.kind != Value::Kind::String)
    throw Error(s.name.loc, "scope: name must be a module name (bert) or '', found " + name.describe());
  if (!name.text.empty() && (name.text.front() == '.' || name.text.back() == '.' || name.text.find("..") != std::string::npos ||
                             name.text.find_first_of(": ") != std::string::npos))
    throw Error(s.name.loc, "scope: name must be a module name, dotted or not (bert, model.encoder), or '', found '" + name.text + "'");
  const std::vector<Member> all = members(spec.layers, "");
  std::vector<std::string> known;
  for (const Member& m : all) known.push_back(m.name);
  const std::unordered_set<std::string_view> top(known.begin(), known.end());
  for (const Named& n : s.members) {
    if (!top.count(n.name))
      throw Error(n.loc, "scope: members: '" + n.name + "' is no top-level member (a layer's name up to its first dot)" +
                             suggestion(n.name, known));
    if (!out.members.insert(n.name).second) throw Error(n.loc, "scope: members: '" + n.name + "' is listed twice");
  }
  if (name.text.empty()) return out;
  out.prefix = name.text + ".";
  for (const RawRegister& list : spec.registers)
    for (const Named& n : list.members)
      if (list.module.empty() && out.members.count(n.name))
        throw Error(n.loc, "register: '" + n.name + "' is a member of the scope '" + name.text +
                               "', not of the model; the model's own list cannot order it");
  return out;
}

void add_modules(const std::vector<Named>& modules, const std::string& module, std::vector<std::string>& out) {
  for (const Named& n : modules) out.push_back(module + (module.empty() ? "" : ".") + n.name);
}

void add_registrations(const std::vector<RawRegister>& lists, const std::string& module,
                       std::vector<Registration>& out) {
  for (const RawRegister& list : lists) {
    Registration& r = out.emplace_back();
    r.module = module + (module.empty() || list.module.empty() ? "" : ".") + list.module;
    for (const Named& n : list.members) r.members.push_back(n.name);
  }
}

}  // namespace nnmem::raw
