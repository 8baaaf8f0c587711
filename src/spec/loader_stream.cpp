// Text -> one YAML document, working around what yaml-cpp 0.7 reports obscurely or not at all.
// With loader.cpp and loader_nodes.cpp, the only code that includes yaml-cpp.
#include "loader_stream.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem::raw {
namespace {

// An event handler that ignores everything; the replays below override the events they need.
class QuietHandler : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Replays a parse that yaml-cpp refused for nesting too deep, to find the deepest collection it
// opened: the node that failed is that collection's first child.
class DeepestCollection : public QuietHandler {
 public:
  YAML::Mark mark;
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { mark = m; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { mark = m; }
};

// yaml-cpp 0.7 refuses a node nested 500 levels deep (its parser's DepthGuard<500>, counting the
// document's root as level 1) and calls it a "bad file", placed wherever its scanner had read to.
Error too_deep(const SourceText& source, const std::string& text, const YAML::DeepRecursion& e) {
  DeepestCollection deepest;
  std::istringstream stream(text);
  try {
    YAML::Parser parser(stream);
    while (parser.HandleNextDocument(deepest)) {
    }
  } catch (const YAML::ParserException&) {
    // Expected: the same refusal, now with the events that led to it.
  }
  const std::string message = "invalid YAML: the document nests more than " + std::to_string(e.depth() - 1) + " levels deep";
  if (deepest.mark.is_null()) return Error(source.loc(e.mark.line, e.mark.column), message);
  // A block mapping's mark is its first key, which is the child itself; otherwise the child is
  // the first token after the '[', '{' or '-' that opens the collection.
  const int line = deepest.mark.line, column = deepest.mark.column;
  return Error(source.opens_collection(line, column) ? source.next_token(line, column) : source.loc(line, column), message);
}

// Records where each document starts (the mark of its first token), and where the aliases
// that are list items stand.
class DocumentStarts : public QuietHandler {
 public:
  YAML::Mark mark;
  AliasItems alias_items;

  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { item(); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override { item(); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    if (!open_.empty() && open_.back().list) alias_items.add(open_.back().mark, open_.back().items, m);
    item();
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    item();
    open_.push_back({m, true, 0});
  }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    item();
    open_.push_back({m, false, 0});
  }
  void OnSequenceEnd() override { open_.pop_back(); }
  void OnMapEnd() override { open_.pop_back(); }

 private:
  struct Open {
    YAML::Mark mark;
    bool list;
    std::size_t items;  // nodes seen directly inside it
  };
  void item() {
    if (!open_.empty()) ++open_.back().items;
  }
  std::vector<Open> open_;  // the collections being read, innermost last
};

// yaml-cpp 0.7 reads a token it cannot place at a document's top level — a ',' outside any
// [...] or {...}, as in "[a], b" or ", a" — as an empty document, and leaves the token unread:
// the next document starts at the same token, and so on forever. YAML::LoadAll then appends a
// null node per round until memory runs out (found by fuzzing: tests/fuzz/regressions/
// top_level_comma.yaml). Replay the stream as events first, which costs no nodes, and stop at
// the first document that starts where the one before it did: the parser made no progress.
// A document that reads nothing is exactly this loop, so no valid file is refused. Parse
// errors surface here as they would from LoadAll, and are handled by read()'s caller alike.
AliasItems check_progress(const SourceText& source, const std::string& text) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  YAML::Mark previous = YAML::Mark::null_mark();
  while (parser.HandleNextDocument(starts)) {
    const YAML::Mark m = starts.mark;
    if (!previous.is_null() && m.pos == previous.pos && m.line == previous.line && m.column == previous.column) {
      const char c = source.char_at(m.line, m.column);
      throw Error(source.loc(m.line, m.column),
                  c == ',' ? "invalid YAML: this ',' is outside any [list] or {mapping}; quote a string that holds a comma"
                           : "invalid YAML: unexpected '" + std::string(1, c) + "'");
    }
    previous = m;
  }
  return std::move(starts.alias_items);
}

// Where a second document starts: at its content, or at the '---' that opens an empty one.
SourceLoc second_document(const SourceText& source, const YAML::Node& doc) {
  const YAML::Mark m = doc.Mark();
  if (m.is_null()) return {source.file(), 1, 1};
  if (doc.IsNull())
    for (int line = m.line; line >= 0; --line)
      if (source.starts_document(line)) return source.loc(line, 0);
  return source.loc(m.line, m.column);
}

}  // namespace

std::optional<SourceLoc> AliasItems::at(const SourceText& source, const YAML::Node& list, std::size_t index) const {
  const auto it = marks_.find({list.Mark().pos, index});
  if (it == marks_.end()) return std::nullopt;
  return source.loc(it->second.line, it->second.column);
}

Document load_single_document(const SourceText& source, const std::string& text) {
  std::vector<YAML::Node> docs;
  AliasItems alias_items;
  try {
    alias_items = check_progress(source, text);
    docs = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    throw too_deep(source, text, e);
  } catch (const YAML::ParserException& e) {
    if (auto clearer = source.explain_syntax_error(e.mark.line, e.mark.column)) throw *clearer;
    throw Error(source.loc(e.mark.line, e.mark.column), "invalid YAML: " + e.msg);
  }
  if (docs.empty() || docs[0].IsNull())
    throw Error({source.file(), 1, 1}, "the file is empty; a spec needs 'inputs' and 'layers'");
  if (docs.size() > 1)
    throw Error(second_document(source, docs[1]), "the file holds several YAML documents; a spec is one document");
  return {docs[0], std::move(alias_items)};
}

}  // namespace nnmem::raw
