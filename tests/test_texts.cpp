// Texts: a timeline's block descriptions kept in 64 KiB pieces, each a view — the same texts
// back whatever their length, through growth, copies and moves.
#include <string>

#include "helpers.hpp"

using namespace nnmem;

TEST_CASE("Texts keeps each text whole, across pieces, copies and moves") {
  Texts texts;
  CHECK(texts.empty());
  const std::string_view parts[] = {"output of ", "body.12.fc1", " (recomputed)"};
  texts.push_back(parts, 3);
  texts.push_back("");
  const std::string long_text(70000, 'x');  // more than a piece: a piece of its own
  std::vector<std::string> expected = {"output of body.12.fc1 (recomputed)", "", long_text};
  texts.push_back(long_text);
  for (int k = 0; k < 20000; ++k) {  // several pieces' worth; none straddles two
    expected.push_back("grad of layer " + std::to_string(k));
    texts.push_back(expected.back());
  }
  REQUIRE(texts.size() == expected.size());
  const auto same = [&](const Texts& t) {
    REQUIRE(t.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) CHECK(t[k] == expected[k]);
  };
  same(texts);
  Texts copy = texts;
  same(copy);
  Texts moved = std::move(texts);
  same(moved);
  copy = moved;  // assigned over texts of its own
  same(copy);
  copy.push_back("one more");
  CHECK(copy[copy.size() - 1] == "one more");
  CHECK(moved.size() == expected.size());
  Texts first_empty;  // an empty text before any piece is made (a timeline's first layer, "")
  first_empty.push_back("");
  first_empty.push_back("loss");
  CHECK(first_empty[0].empty());
  CHECK(first_empty[1] == "loss");
}
