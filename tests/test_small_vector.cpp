// SmallVector (include/nnmem/small_vector.hpp) against std::vector: every operation the graph
// uses, with the elements inline and spilled to the heap, copies and moves between the two,
// and a counted element type whose constructions and destructions must balance.
#include <doctest/doctest.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <list>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nnmem/shape.hpp"
#include "nnmem/small_vector.hpp"

using nnmem::SmallVector;

namespace {

template <typename T, std::size_t N>
std::vector<T> as_vector(const SmallVector<T, N>& v) {
  return std::vector<T>(v.begin(), v.end());
}

/// A string that counts the live objects of its type: a leak or a double destruction shows.
struct Counted {
  static inline int live = 0;
  std::string text;
  Counted(const char* t = "") : text(t) { ++live; }  // NOLINT: implicit, for braced lists
  Counted(const Counted& o) : text(o.text) { ++live; }
  Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++live; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --live; }
  friend bool operator==(const Counted&, const Counted&) = default;
  friend auto operator<=>(const Counted& a, const Counted& b) { return a.text <=> b.text; }
};

}  // namespace

TEST_CASE("SmallVector holds N elements inline and spills beyond") {
  SmallVector<int, 2> v;
  CHECK(v.empty());
  CHECK(v.is_inline());
  CHECK(v.capacity() == 2);
  v.push_back(1);
  v.emplace_back(2);
  CHECK(v.is_inline());
  CHECK(v.size() == 2);
  v.push_back(3);
  CHECK_FALSE(v.is_inline());
  CHECK(v.capacity() >= 3);
  CHECK(as_vector(v) == std::vector<int>{1, 2, 3});
  CHECK(v.front() == 1);
  CHECK(v.back() == 3);
  CHECK(v.at(2) == 3);
  CHECK_THROWS_AS(v.at(3), std::out_of_range);
  CHECK(*v.data() == 1);
  v.pop_back();
  CHECK(as_vector(v) == std::vector<int>{1, 2});
  v.clear();
  CHECK(v.empty());
  // The heap block's pointer shares the inline elements' bytes: a size, a capacity, and the
  // larger of a pointer and the N elements.
  constexpr std::size_t counts = 2 * sizeof(std::uint32_t);
  CHECK(sizeof(SmallVector<int, 2>) == counts + std::max(sizeof(int*), 2 * sizeof(int)));
  CHECK(sizeof(SmallVector<std::int64_t, 4>) == counts + 4 * sizeof(std::int64_t));
  CHECK(sizeof(SmallVector<char, 1>) == counts + sizeof(char*));
}

TEST_CASE("SmallVector's constructors and assign") {
  CHECK(as_vector(SmallVector<int, 3>{4, 5}) == std::vector<int>{4, 5});
  CHECK(as_vector(SmallVector<int, 3>{4, 5, 6, 7}) == std::vector<int>{4, 5, 6, 7});
  CHECK(as_vector(SmallVector<int, 3>(5, -1)) == std::vector<int>(5, -1));
  CHECK(as_vector(SmallVector<int, 3>(2)) == std::vector<int>{0, 0});
  const std::list<int> list{7, 8, 9, 10};  // not random access
  CHECK(as_vector(SmallVector<int, 2>(list.begin(), list.end())) == std::vector<int>{7, 8, 9, 10});

  SmallVector<int, 2> v{1, 2, 3, 4, 5};
  v.assign({9});
  CHECK(as_vector(v) == std::vector<int>{9});
  v.assign(4, 6);
  CHECK(as_vector(v) == std::vector<int>(4, 6));
  v.assign(v.begin(), v.begin());
  CHECK(v.empty());
  v = {1, 2, 3};
  CHECK(as_vector(v) == std::vector<int>{1, 2, 3});
}

TEST_CASE("SmallVector copies and moves between inline and spilled") {
  Counted::live = 0;
  {
    using V = SmallVector<Counted, 2>;
    const V small{"a", "b"};
    const V big{"a", "b", "c", "d"};
    for (const V* from : {&small, &big}) {
      for (const V* onto : {&small, &big}) {
        V copy(*from);
        CHECK(copy == *from);
        V target(*onto);
        target = copy;  // copy assignment, inline or spilled on either side
        CHECK(target == *from);
        V moved(std::move(copy));  // move construction leaves the source empty
        CHECK(moved == *from);
        CHECK(copy.empty());  // NOLINT: a moved-from SmallVector is empty, as documented
        CHECK(copy.is_inline());
        V onto_copy(*onto);
        onto_copy = std::move(moved);
        CHECK(onto_copy == *from);
        CHECK(moved.empty());  // NOLINT
        onto_copy.push_back("z");  // the emptied and the filled ones stay usable
        moved.push_back("y");
        CHECK(onto_copy.size() == from->size() + 1);
        CHECK(moved.size() == 1);
        V self(*from);
        self = *&self;
        CHECK(self == *from);
        V a(*from), b(*onto);
        swap(a, b);
        CHECK(a == *onto);
        CHECK(b == *from);
      }
    }
  }
  CHECK(Counted::live == 0);
}

TEST_CASE("SmallVector's insert and erase, inline and spilled, against std::vector") {
  Counted::live = 0;
  {
    SmallVector<Counted, 3> v{"a", "b"};
    std::vector<Counted> ref{"a", "b"};
    CHECK(v.insert(v.begin(), "x")->text == "x");  // front, stays inline (3)
    ref.insert(ref.begin(), "x");
    CHECK(v.is_inline());
    CHECK(as_vector(v) == ref);
    CHECK(v.insert(v.begin() + 1, "y")->text == "y");  // middle, spills
    ref.insert(ref.begin() + 1, "y");
    CHECK_FALSE(v.is_inline());
    CHECK(as_vector(v) == ref);
    v.insert(v.end(), v.front());  // an element of itself, at the end
    ref.insert(ref.end(), ref.front());
    CHECK(as_vector(v) == ref);
    v.insert(v.begin() + 2, 3, v[1]);
    ref.insert(ref.begin() + 2, 3, ref[1]);
    CHECK(as_vector(v) == ref);
    const std::vector<Counted> more{"p", "q"};
    v.insert(v.begin() + 1, more.begin(), more.end());
    ref.insert(ref.begin() + 1, more.begin(), more.end());
    CHECK(as_vector(v) == ref);
    CHECK(v.erase(v.begin())->text == ref[1].text);
    ref.erase(ref.begin());
    const auto next = v.erase(v.begin() + 2, v.begin() + 5);
    CHECK(next == v.begin() + 2);
    ref.erase(ref.begin() + 2, ref.begin() + 5);
    CHECK(as_vector(v) == ref);
    const auto past = v.erase(v.end() - 1);  // not compared in one expression: v.end() moves
    CHECK(past == v.end());
    ref.erase(ref.end() - 1);
    CHECK(as_vector(v) == ref);
    CHECK(v.erase(v.begin(), v.begin()) == v.begin());
    CHECK(as_vector(v) == ref);

    SmallVector<Counted, 3> w{"a", "b"};  // inline throughout
    w.insert(w.begin() + 1, {"m"});
    w.erase(w.begin());
    CHECK(w.is_inline());
    CHECK(as_vector(w) == std::vector<Counted>{"m", "b"});
    w.emplace(w.end(), "e");
    CHECK(as_vector(w) == std::vector<Counted>{"m", "b", "e"});
  }
  CHECK(Counted::live == 0);
}

TEST_CASE("SmallVector's random operations match std::vector's") {
  std::mt19937 rng(16);
  SmallVector<int, 4> v;
  std::vector<int> ref;
  for (int op = 0; op < 20'000; ++op) {
    const int x = static_cast<int>(rng() % 100);
    const auto pos = ref.empty() ? 0 : rng() % (ref.size() + 1);
    switch (rng() % 8) {
      case 0: v.push_back(x); ref.push_back(x); break;
      case 1: if (!ref.empty()) { v.pop_back(); ref.pop_back(); } break;
      case 2: v.insert(v.begin() + pos, x); ref.insert(ref.begin() + pos, x); break;
      case 3:
        if (pos < ref.size()) { v.erase(v.begin() + pos); ref.erase(ref.begin() + pos); }
        break;
      case 4: v.resize(x % 9); ref.resize(x % 9); break;
      case 5: v.resize(x % 9, x); ref.resize(x % 9, x); break;
      case 6: v.reserve(x % 12); break;
      default: if (x < 5) { v.clear(); ref.clear(); } break;
    }
    REQUIRE(as_vector(v) == ref);
    REQUIRE(v.capacity() >= v.size());
    REQUIRE(v.is_inline() == (v.capacity() == 4));
  }
}

TEST_CASE("SmallVector compares as std::vector does") {
  using V = SmallVector<int, 2>;
  const std::vector<std::vector<int>> values{{}, {1}, {1, 2}, {1, 2, 3}, {1, 3}, {2}, {0, 9, 9, 9}};
  for (const auto& a : values) {
    for (const auto& b : values) {
      const V va(a.begin(), a.end()), vb(b.begin(), b.end());
      CHECK((va == vb) == (a == b));
      CHECK((va != vb) == (a != b));
      CHECK((va <=> vb) == (a <=> b));
      CHECK((va < vb) == (a < b));
    }
  }
}

TEST_CASE("Shape holds NCHW inline and reads and writes as a JSON array") {
  // nnmem::Shape is SmallVector<std::int64_t, 4>: what the graph holds per tensor, written by
  // the JSON report through nlohmann-json as any sequence is.
  const nnmem::Shape nchw{32, 64, 112, 112};
  CHECK(nchw.is_inline());
  CHECK_FALSE(nnmem::Shape{1, 2, 3, 4, 5}.is_inline());
  const nlohmann::json j = nchw;
  CHECK(j.dump() == "[32,64,112,112]");
  CHECK(j.get<nnmem::Shape>() == nchw);
  CHECK(nnmem::to_string(nchw) == "[32, 64, 112, 112]");
}
