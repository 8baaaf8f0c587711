// model.parameters()' order (module_order.hpp): a walk along the current tensor's path for the
// models declared in that order, the whole module tree and a sort for the others. (The tree of
// 100,000 Linear layers' 200,000 tensors was 15 MB, the build's resident peak: bench/README.md,
// "Reserved, trimmed and walked".)
#include "module_order.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>

namespace nnmem::detail {
namespace {

// A module's `register:` list as ranks: each member's place (the first, if named twice), found
// by name (a search of the list per member made a list of 20,000 quadratic).
struct Ranks {
  std::unordered_map<std::string_view, int> place;
  int size = 0;
};
using Listed = std::unordered_map<std::string, Ranks>;  // module -> its `register:`

Listed listed_of(const std::vector<Registration>& registrations) {
  Listed listed;
  for (const Registration& r : registrations) {
    Ranks ranks;
    for (const std::string& m : r.members) ranks.place.try_emplace(m, ranks.size++);
    listed.insert_or_assign(r.module, std::move(ranks));
  }
  return listed;
}

const Ranks* find_listed(const Listed& listed, std::string_view module) {
  if (listed.empty()) return nullptr;
  const auto it = listed.find(std::string(module));
  return it == listed.end() ? nullptr : &it->second;
}

// A member's rank in its module: its place in the module's `register:` list, else after the
// list, in the order the members it does not name are first met (`unlisted` counts them).
int rank_of(const Ranks* list, int& unlisted, std::string_view member) {
  if (list) {
    const auto at = list->place.find(member);
    if (at != list->place.end()) return at->second;
    return list->size + unlisted++;
  }
  return unlisted++;
}

// A key level: (0 for a tensor of the module's own | 1 for a child module, the member's rank),
// as one number that orders as the pair does.
std::int64_t level(bool child, int rank) { return std::int64_t{child} << 32 | rank; }

// The holder's parts of a tensor's name ("model", "2", "cv1", "conv" of "model.2.cv1.conv.weight")
// and then its own ("weight"), as views into it.
void split(std::string_view name, std::vector<std::string_view>& parts) {
  parts.clear();
  const std::size_t last_dot = name.rfind('.');
  const std::size_t leaf = last_dot == std::string_view::npos ? 0 : last_dot + 1;
  for (std::size_t from = 0; from < leaf;) {
    const std::size_t dot = name.find('.', from);
    parts.push_back(name.substr(from, dot - from));
    from = dot + 1;
  }
  parts.push_back(name.substr(leaf));
}

// The qualified name of the module that `part` (one of split's views into `name`) names:
// "model.2" for the part "2" of "model.2.cv1.conv.weight".
std::string_view up_to(std::string_view name, std::string_view part) {
  return name.substr(0, static_cast<std::size_t>(part.data() - name.data()) + part.size());
}

// The module tree as model.parameters() walks it, built from the tensors' names. Each module
// ranks its members (rank_of). Members are keyed by their module and a view into the names
// (which outlive the tree), in one open-addressing table: no allocation per member.
class ModuleTree {
 public:
  // (Room for a member per tensor and one per module holding one: what most models have, so
  // that the members are not moved, old and new arrays held at once, as the tree grows.)
  ModuleTree(const std::vector<Registration>& registrations, std::size_t tensors) : listed_(listed_of(registrations)) {
    modules_.emplace_back().list = find_listed(listed_, "");
    members_.reserve(2 * tensors);
  }

  // Appends to `key` a level per tree level of the tensor named `name`: (0 for a tensor of its
  // own | 1 for a child module, the member's rank), as one number that orders as the pair does.
  // A layer's tensors come one after another: the levels of the module that held the previous
  // tensor are kept for the next. The same names give the same keys again (ranks are given once).
  void key(std::string_view name, std::vector<std::int64_t>& key) {
    split(name, parts_);
    const std::string_view own = parts_.back();
    if (const std::string_view holder = name.substr(0, static_cast<std::size_t>(own.data() - name.data()));
        holder != last_holder_) {  // "model.2.", or "" for the model
      last_holder_ = holder;
      last_levels_.clear();
      last_module_ = 0;
      for (std::size_t j = 0; j + 1 < parts_.size(); ++j) {
        Member& m = members_[member_of(last_module_, parts_[j])];
        last_levels_.push_back(level(true, m.rank));
        if (m.child < 0) {
          m.child = static_cast<int>(modules_.size());
          modules_.push_back({find_listed(listed_, up_to(name, parts_[j])), 0});
        }
        last_module_ = m.child;
      }
    }
    key.insert(key.end(), last_levels_.begin(), last_levels_.end());
    key.push_back(level(false, members_[member_of(last_module_, own)].rank));
  }

 private:
  struct Member {
    std::string_view name;
    int module = 0;  // its index in modules_
    int rank = 0;
    int child = -1;  // its index in modules_, once it is met as a module
  };
  struct Module {
    const Ranks* list = nullptr;  // its `register:`, if given
    int unlisted = 0;                                // members met that its list does not name
  };

  // The index in members_ of module `index`'s member `name`, added (and ranked) when first met.
  int member_of(int index, std::string_view name) {
    if (2 * (members_.size() + 1) > slots_.size()) grow();
    int& slot = slots_[probe(index, name)];
    if (slot < 0) {
      Module& module = modules_[static_cast<std::size_t>(index)];
      const int rank = rank_of(module.list, module.unlisted, name);
      slot = static_cast<int>(members_.size());
      members_.push_back({name, index, rank, -1});
    }
    return slot;
  }

  // The slot of module `index`'s member `name`, else the empty slot where it would go.
  std::size_t probe(int index, std::string_view name) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = (std::hash<std::string_view>{}(name) ^ (static_cast<std::size_t>(index) * 0x9E3779B97F4A7C15u)) & mask;
    for (int m; (m = slots_[i]) >= 0; i = (i + 1) & mask) {
      const Member& member = members_[static_cast<std::size_t>(m)];
      if (member.module == index && member.name == name) break;
    }
    return i;
  }

  void grow() {
    slots_.assign(std::max<std::size_t>(64, 2 * slots_.size()), -1);
    for (std::size_t m = 0; m < members_.size(); ++m)
      slots_[probe(members_[m].module, members_[m].name)] = static_cast<int>(m);
  }

  Listed listed_;
  std::vector<Module> modules_;  // [0]: the model
  std::vector<Member> members_;
  std::vector<int> slots_;        // indices into members_, -1: empty; a power of two, at most half full
  std::string_view last_holder_;  // the previous tensor's name up to its own ("model.2."; "": the model's)
  int last_module_ = 0;           // its index in modules_
  std::vector<std::int64_t> last_levels_;  // its key levels
  std::vector<std::string_view> parts_;    // the name being keyed, split
};

// The members met so far in one module, by their names' hashes: an open-addressing set that is
// emptied, when its module is left, in the time its members took to add.
class SeenMembers {
 public:
  // False when `name`'s hash is there already (the member was met, or two names collide).
  bool insert(std::string_view name) {
    const std::uint64_t h = std::hash<std::string_view>{}(name) | 1;  // 0 marks an empty slot
    if (2 * (used_.size() + 1) > slots_.size()) grow();
    std::size_t i = h & (slots_.size() - 1);
    for (; slots_[i] != 0; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i] == h) return false;
    slots_[i] = h;
    used_.push_back(i);
    return true;
  }
  void clear() {
    for (const std::size_t i : used_) slots_[i] = 0;
    used_.clear();
  }

 private:
  void grow() {
    std::vector<std::uint64_t> hashes;
    hashes.reserve(used_.size());
    for (const std::size_t i : used_) hashes.push_back(slots_[i]);
    slots_.assign(std::max<std::size_t>(16, 2 * slots_.size()), 0);
    used_.clear();
    for (const std::uint64_t h : hashes) {
      std::size_t i = h & (slots_.size() - 1);
      while (slots_[i] != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = h;
      used_.push_back(i);
    }
  }
  std::vector<std::uint64_t> slots_;  // a power of two, at most half full
  std::vector<std::size_t> used_;     // the slots filled
};

// A module on the current tensor's path, and the member the path takes through it.
struct OnPath {
  const Ranks* list = nullptr;  // its `register:`, if given
  int unlisted = 0;
  std::string member;
  std::int64_t level = -1;  // the member's key level (-1: none yet)
  SeenMembers seen;
};

}  // namespace

// Consecutive tensors' keys compared where their paths part: at the first module whose member
// differs (or is a tensor on one path and a module on the other). The tree's keys are equal
// before that module, and after it the modules are new to the walk; a module met again after
// it was left would have been seen by its parent, still on the path, and says "not in order".
bool in_module_order(std::size_t count, const std::function<void(std::size_t, std::string&)>& name,
                     const std::vector<Registration>& registrations) {
  const Listed listed = listed_of(registrations);
  std::vector<OnPath> path(1);
  path[0].list = find_listed(listed, "");
  std::size_t depth = 1;  // path[0, depth) is the previous tensor's
  std::string text;
  std::vector<std::string_view> parts;
  for (std::size_t i = 0; i < count; ++i) {
    name(i, text);
    split(text, parts);
    const std::size_t leaf = parts.size() - 1;
    std::size_t d = 0;  // the first module where the paths part
    while (d < leaf && d + 1 < depth && path[d].member == parts[d]) ++d;
    OnPath& at = path[d];
    const bool child = d < leaf;
    std::int64_t key;
    if (at.level >= 0 && at.member == parts[d]) {
      key = level(child, static_cast<int>(at.level & 0xffffffff));  // the same member, as a tensor and as a module
    } else {
      if (!at.seen.insert(parts[d])) return false;
      key = level(child, rank_of(at.list, at.unlisted, parts[d]));
    }
    if (key < at.level) return false;
    at.member.assign(parts[d]);
    at.level = key;
    for (std::size_t j = d + 1; j < depth; ++j) path[j].seen.clear();
    for (std::size_t j = d + 1; j <= leaf; ++j) {  // the modules below, new to the walk
      if (path.size() <= j) path.emplace_back();
      OnPath& module = path[j];
      module.list = find_listed(listed, up_to(text, parts[j - 1]));
      module.unlisted = 0;
      module.seen.insert(parts[j]);
      module.member.assign(parts[j]);
      module.level = level(j < leaf, rank_of(module.list, module.unlisted, parts[j]));
    }
    depth = leaf + 1;
  }
  return true;
}

std::vector<int> module_order(const std::vector<std::string_view>& names, const std::vector<Registration>& registrations) {
  ModuleTree tree(registrations, names.size());
  // The keys, end to end; tensor i's are keys[start[i], start[i + 1]).
  std::vector<std::int64_t> keys;
  std::vector<std::size_t> start;
  keys.reserve(4 * names.size());
  start.reserve(names.size() + 1);
  for (const std::string_view name : names) {
    start.push_back(keys.size());
    tree.key(name, keys);
  }
  start.push_back(keys.size());
  const auto less = [&](int a, int b) {
    const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
    return std::lexicographical_compare(keys.begin() + static_cast<std::ptrdiff_t>(start[i]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[i + 1]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[j]),
                                        keys.begin() + static_cast<std::ptrdiff_t>(start[j + 1]));
  };
  std::vector<int> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  return order;
}

}  // namespace nnmem::detail
