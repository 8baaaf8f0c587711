// model.parameters()' order (src/graph/module_order.hpp): the walk that says "already in order"
// without the tree must agree with the tree's sort. Random module trees, with and without
// `register:` lists, walked in model.parameters()' order (which both must accept as it is), then
// shuffled or with two tensors swapped (which the walk may accept only when the sort leaves them).
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../src/graph/module_order.hpp"

using nnmem::Registration;
using nnmem::detail::in_module_order;
using nnmem::detail::module_order;

namespace {

struct Case {
  std::vector<std::string> names;  // in model.parameters()' order
  std::vector<Registration> registrations;
};

// A module `prefix` ("" for the model) with tensors of its own and child modules, a `register:`
// list for some, appended in the order PyTorch walks it: own tensors, then children; listed
// members in their list's order before the others.
void grow(Case& c, std::mt19937& rng, const std::string& prefix, int depth) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<std::string> tensors, children;
  for (int i = pick(3) + (depth == 0 ? 0 : 1); i > 0; --i) tensors.push_back("t" + std::to_string(tensors.size()));
  for (int i = depth < 3 ? pick(4) : 0; i > 0; --i) children.push_back(pick(2) ? std::to_string(children.size()) : "m" + std::to_string(children.size()));
  std::vector<std::string> listed;
  if (pick(3) == 0) {
    for (const auto& group : {tensors, children})
      for (const auto& m : group)
        if (pick(2)) listed.push_back(m);
    std::shuffle(listed.begin(), listed.end(), rng);
    c.registrations.push_back({prefix, listed});
  }
  const auto in_model_order = [&](std::vector<std::string> members) {
    std::stable_sort(members.begin(), members.end(), [&](const std::string& a, const std::string& b) {
      const auto rank = [&](const std::string& m) { return std::find(listed.begin(), listed.end(), m) - listed.begin(); };
      return rank(a) < rank(b);  // unlisted ones (the list's size) after, in the order they were made
    });
    return members;
  };
  const std::string dot = prefix.empty() ? "" : prefix + ".";
  for (const auto& t : in_model_order(tensors)) c.names.push_back(dot + t);
  for (const auto& m : in_model_order(children)) grow(c, rng, dot + m, depth + 1);
}

std::vector<std::string_view> views(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }

bool walk_says_in_order(const std::vector<std::string>& names, const std::vector<Registration>& registrations) {
  return in_module_order(names.size(), [&](std::size_t i, std::string& s) { s = names[i]; }, registrations);
}

bool sort_leaves(const std::vector<std::string>& names, const std::vector<Registration>& registrations) {
  const std::vector<int> order = module_order(views(names), registrations);
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int>(i)) return false;
  return true;
}

}  // namespace

TEST_CASE("the walk accepts model.parameters()' order and nothing the sort would move") {
  std::mt19937 rng(20261203);
  int accepted_moved = 0, shuffled_in_order = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Case c;
    grow(c, rng, "", 0);
    if (c.names.empty()) continue;
    CAPTURE(trial);
    REQUIRE(sort_leaves(c.names, c.registrations));
    CHECK(walk_says_in_order(c.names, c.registrations));
    std::vector<std::string> moved = c.names;
    if (trial % 2 == 0) {
      std::shuffle(moved.begin(), moved.end(), rng);
    } else if (moved.size() > 1) {
      const std::size_t i = rng() % (moved.size() - 1);
      std::swap(moved[i], moved[i + 1]);
    }
    const bool kept = sort_leaves(moved, c.registrations);
    if (walk_says_in_order(moved, c.registrations) && !kept) ++accepted_moved;
    if (kept && moved != c.names) ++shuffled_in_order;
  }
  CHECK(accepted_moved == 0);
  CHECK(shuffled_in_order > 0);  // some orders that differ from the walk's are model.parameters()' too
}

TEST_CASE("the walk: modules left and met again, registered members, a tensor's name reused as a module") {
  const std::vector<Registration> none;
  CHECK(walk_says_in_order({"a.w", "a.b", "b.w", "c.0.w", "c.1.w"}, none));
  CHECK_FALSE(walk_says_in_order({"a.w", "b.w", "a.v"}, none));       // `a` left, then met again
  CHECK_FALSE(walk_says_in_order({"a.x.w", "a.y.w", "a.x.v"}, none));  // `a.x` left within `a`
  CHECK_FALSE(walk_says_in_order({"a.x.w", "a.v"}, none));             // a's own tensor after its child's
  CHECK(walk_says_in_order({"cls_token", "emb.w"}, none));
  const std::vector<Registration> reversed = {{"up", {"1", "0"}}};
  CHECK(walk_says_in_order({"up.1.w", "up.0.w"}, reversed));
  CHECK_FALSE(walk_says_in_order({"up.0.w", "up.1.w"}, reversed));
  CHECK(sort_leaves({"up.1.w", "up.0.w"}, reversed));
  CHECK(module_order(views({"up.0.w", "up.1.w"}), reversed) == std::vector<int>{1, 0});
  // `a` a tensor of the model and then a module: own tensors first, so the order holds.
  CHECK(walk_says_in_order({"a", "a.w"}, none));
  CHECK(sort_leaves({"a", "a.w"}, none));
  CHECK_FALSE(walk_says_in_order({"a.w", "a"}, none));
  CHECK(module_order(views({"a.w", "a"}), none) == std::vector<int>{1, 0});
}
