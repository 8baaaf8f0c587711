// Text -> one YAML document, in one pass of yaml-cpp's event parser, working around what
// yaml-cpp 0.7 reports obscurely or not at all. With loader_nodes.cpp, the only code that
// includes yaml-cpp's parser.
#include "loader_stream.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <vector>

#include "nnmem/diagnostic.hpp"

namespace nnmem::raw {
namespace {

// Builds the document's nodes from the parser's events as yaml-cpp's NodeBuilder would (an
// alias is its anchor's node, registered when the anchored node starts, so `&a [*a]` holds
// itself), and records what the guards below need: where each document starts, the last
// collection opened, where the aliases that are list items stand.
class TreeBuilder : public YAML::EventHandler {
 public:
  explicit TreeBuilder(YamlDoc& doc) : doc_(doc) {}

  YAML::Mark document_start;                              // of the last document started
  YAML::Mark last_collection = YAML::Mark::null_mark();  // the last list or mapping opened
  std::vector<std::uint32_t> roots;                       // one a document (the first two)
  int documents = 0;                                      // started so far
  AliasItems alias_items;

  // Only the first two documents are built: a spec is the first, and an error names where the
  // second starts (2.5 million documents, "--- x" lines, built 350 MB of nodes).
  void OnDocumentStart(const YAML::Mark& m) override {
    document_start = m;
    ++documents;
    anchors_.clear();  // anchors are numbered per document
    building_ = roots.size() < 2;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    if (building_) leaf(doc_.add(YamlDoc::Kind::Null, m, ""), anchor);
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    if (building_) leaf(doc_.add(YamlDoc::Kind::Scalar, m, tag, value), anchor);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    if (!building_) return;
    if (!open_.empty() && doc_.node(open_.back().id).is_list())
      alias_items.add(open_.back().id, pending_.size() - open_.back().first, m);
    attach(anchors_.at(anchor));  // the parser refuses an alias to an anchor not defined
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(YamlDoc::Kind::List, m, tag, anchor);
  }
  void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(YamlDoc::Kind::Map, m, tag, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }


 private:
  struct Open {
    std::uint32_t id;
    std::size_t first;  // its children in pending_
  };
  void name(std::uint32_t id, YAML::anchor_t anchor) {
    if (anchor == YAML::NullAnchor) return;
    if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
    anchors_[anchor] = id;
  }
  void leaf(std::uint32_t id, YAML::anchor_t anchor) {
    name(id, anchor);
    attach(id);
  }
  void open(YamlDoc::Kind kind, const YAML::Mark& m, const std::string& tag, YAML::anchor_t anchor) {
    last_collection = m;
    if (!building_) return;
    const std::uint32_t id = doc_.add(kind, m, tag);
    name(id, anchor);
    open_.push_back({id, pending_.size()});
  }
  void close() {
    if (!building_) return;
    const Open o = open_.back();
    open_.pop_back();
    doc_.set_children(o.id, pending_.data() + o.first, pending_.size() - o.first);
    pending_.resize(o.first);
    attach(o.id);
  }
  void attach(std::uint32_t id) {
    if (open_.empty()) roots.push_back(id);
    else pending_.push_back(id);
  }

  YamlDoc& doc_;
  bool building_ = true;
  std::vector<Open> open_;               // the collections being read, innermost last
  std::vector<std::uint32_t> pending_;   // their children so far
  std::vector<std::uint32_t> anchors_;   // anchor number -> node
};

// yaml-cpp 0.7 refuses a node nested 500 levels deep (its parser's DepthGuard<500>, counting the
// document's root as level 1) and calls it a "bad file", placed wherever its scanner had read to.
// The node that failed is the first child of the deepest collection opened, the last one.
Error too_deep(const SourceText& source, const YAML::Mark& deepest, const YAML::DeepRecursion& e) {
  const std::string message = "invalid YAML: the document nests more than " + std::to_string(e.depth() - 1) + " levels deep";
  if (deepest.is_null()) return Error(source.loc(e.mark.line, e.mark.column), message);
  // A block mapping's mark is its first key, which is the child itself; otherwise the child is
  // the first token after the '[', '{' or '-' that opens the collection.
  const int line = deepest.line, column = deepest.column;
  return Error(source.opens_collection(line, column) ? source.next_token(line, column) : source.loc(line, column), message);
}

// yaml-cpp 0.7 reads a token it cannot place at a document's top level — a ',' outside any
// [...] or {...}, as in "[a], b" or ", a" — as an empty document, and leaves the token unread:
// the next document starts at the same token, and so on forever (YAML::LoadAll appended a null
// node per round until memory ran out; found by fuzzing: tests/fuzz/regressions/
// top_level_comma.yaml). Stop at the first document that starts where the one before it did:
// the parser made no progress. A document that reads nothing is exactly this loop, so no valid
// file is refused.
void check_progress(const SourceText& source, const YAML::Mark& previous, const YAML::Mark& m) {
  if (previous.is_null() || m.pos != previous.pos || m.line != previous.line || m.column != previous.column) return;
  const char c = source.char_at(m.line, m.column);
  throw Error(source.loc(m.line, m.column),
              c == ',' ? "invalid YAML: this ',' is outside any [list] or {mapping}; quote a string that holds a comma"
                       : "invalid YAML: unexpected '" + std::string(1, c) + "'");
}

// Where a second document starts: at its content, or at the '---' that opens an empty one.
SourceLoc second_document(const SourceText& source, const YNode& doc) {
  const YAML::Mark m = doc.mark();
  if (m.is_null()) return {source.file(), 1, 1};
  if (doc.is_null())
    for (int line = m.line; line >= 0; --line)
      if (source.starts_document(line)) return source.loc(line, 0);
  return source.loc(m.line, m.column);
}

}  // namespace

std::uint32_t YamlDoc::add(Kind kind, const YAML::Mark& mark, const std::string& tag, std::string scalar) {
  auto [it, fresh] = tag_ids_.emplace(tag, static_cast<std::uint32_t>(tags_.size()));
  if (fresh) tags_.push_back(tag);
  nodes_.push_back({mark, std::move(scalar), it->second, 0, 0, kind});
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

void YamlDoc::set_children(std::uint32_t id, const std::uint32_t* first, std::size_t count) {
  nodes_[id].first = static_cast<std::uint32_t>(children_.size());
  nodes_[id].count = static_cast<std::uint32_t>(count);
  children_.insert(children_.end(), first, first + count);
}

std::optional<SourceLoc> AliasItems::at(const SourceText& source, const YNode& list, std::size_t index) const {
  const auto it = marks_.find({list.id(), index});
  if (it == marks_.end()) return std::nullopt;
  return source.loc(it->second.line, it->second.column);
}

Document load_single_document(const SourceText& source, const std::string& text) {
  auto tree = std::make_unique<YamlDoc>();
  TreeBuilder builder(*tree);
  std::istringstream stream(text);
  try {
    YAML::Parser parser(stream);
    YAML::Mark previous = YAML::Mark::null_mark();
    // The file is refused once it has a second document, so nothing after the third is read
    // (the third shows whether the second is yaml-cpp's endless loop, check_progress's case):
    // parsing 2.5 million more for their syntax errors took 1.7 to 3 s.
    while (builder.documents < 3 && parser.HandleNextDocument(builder)) {
      check_progress(source, previous, builder.document_start);
      previous = builder.document_start;
    }
  } catch (const YAML::DeepRecursion& e) {
    throw too_deep(source, builder.last_collection, e);
  } catch (const YAML::ParserException& e) {
    if (auto clearer = source.explain_syntax_error(e.mark.line, e.mark.column)) throw *clearer;
    throw Error(source.loc(e.mark.line, e.mark.column), "invalid YAML: " + e.msg);
  }
  if (builder.roots.empty() || tree->node(builder.roots[0]).is_null())
    throw Error({source.file(), 1, 1}, "the file is empty; a spec needs 'inputs' and 'layers'");
  if (builder.roots.size() > 1)
    throw Error(second_document(source, tree->node(builder.roots[1])), "the file holds several YAML documents; a spec is one document");
  const YNode root = tree->node(builder.roots[0]);
  return {std::move(tree), root, std::move(builder.alias_items)};
}

}  // namespace nnmem::raw
