// A block's `register:` list: the order its nn.Module's __init__ registers its members, where
// that differs from the order forward calls them (Ultralytics' C2f registers cv1, cv2, then the
// Bottlenecks m that run between them). The graph orders the parameters by it
// (src/graph/parameters.cpp); here the list is checked against the block's layers.
#include <algorithm>
#include <map>

#include "expand.hpp"

namespace nnmem::raw {
namespace {

struct Member {
  std::string name;
  bool module = false;  // some entry of it is a module: not functional, not another's (`share`)
  SourceLoc loc;
};

// The block's members in the order its layers name them: each entry's local name up to its
// first dot ("m" of m.0; an unnamed entry is named by its position).
std::vector<Member> members(const RawBlock& block) {
  std::vector<Member> out;
  for (std::size_t k = 0; k < block.layers.size(); ++k) {
    const RawEntry& e = block.layers[k];
    const std::string local = e.name ? e.name->name : std::to_string(k);
    const std::string head = local.substr(0, local.find('.'));
    const bool functional = e.functional && !e.functional->expression && e.functional->literal.kind == Value::Kind::Bool &&
                            e.functional->literal.boolean;
    auto it = std::find_if(out.begin(), out.end(), [&](const Member& m) { return m.name == head; });
    if (it == out.end()) it = out.insert(out.end(), Member{head, false, e.name ? e.name->loc : e.loc});
    it->module = it->module || (!functional && !e.share);
  }
  return out;
}

}  // namespace

void check_registration(const RawBlock& block) {
  if (!block.registers) return;
  const std::string who = "block '" + block.name + "': register: ";
  const std::vector<Member> all = members(block);
  std::vector<std::string> modules;
  for (const Member& m : all)
    if (m.module) modules.push_back(m.name);
  std::string listing;
  for (const std::string& m : modules) listing += (listing.empty() ? "" : ", ") + m;
  std::map<std::string, SourceLoc> listed;
  for (const Named& n : *block.registers) {
    const auto member = std::find_if(all.begin(), all.end(), [&](const Member& m) { return m.name == n.name; });
    if (member == all.end())
      throw Error(n.loc, who + "'" + n.name + "' is not a member of the block; expected one of its modules (" + listing + ")" +
                             suggestion(n.name, modules));
    if (!member->module)
      throw Error(n.loc, who + "'" + n.name + "' (line " + std::to_string(member->loc.line) +
                             ") is no module of its own (functional, or calling another layer's with 'share'), so it "
                             "registers nothing; expected one of (" + listing + ")");
    const auto [it, fresh] = listed.emplace(n.name, n.loc);
    if (!fresh)
      throw Error(n.loc, who + "'" + n.name + "' is listed twice (first at line " + std::to_string(it->second.line) +
                             ", column " + std::to_string(it->second.column) + ")");
  }
  std::string found;
  for (const Named& n : *block.registers) found += (found.empty() ? "" : ", ") + n.name;
  for (const Member& m : all)
    if (m.module && !listed.count(m.name))
      throw Error(block.registers_loc, who + "does not list '" + m.name + "' (line " + std::to_string(m.loc.line) +
                                           "); expected each of the block's modules (" + listing +
                                           ") once, in the order __init__ registers them, found (" + found + ")");
}

}  // namespace nnmem::raw
